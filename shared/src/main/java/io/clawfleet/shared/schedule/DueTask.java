package io.clawfleet.shared.schedule;

import java.time.Instant;

/**
 * A task whose time has come, as the scheduler claimed it, with what it needs to fire: its chat
 * and, for a heartbeat, the checklist as it reads now.
 *
 * @param dueAt     the due time being fired; with the task id it makes the firing's idempotency key
 * @param checklist HEARTBEAT.md of the tenant for a heartbeat task (null when absent or not a heartbeat)
 */
public record DueTask(String id, String tenantId, long chatId, String channel, String chatKey, int partition,
                      String prompt, String kind, String scheduleType, String scheduleValue, String timeZone,
                      String contextMode, String missedPolicy, Instant dueAt, String checklist, String botId) {

    /** The idempotency key of this firing in the chat's inbox: one message per task and due time, ever. */
    public String idempotencyKey() {
        return "task:" + id + ":" + dueAt.toEpochMilli();
    }
}
