package io.clawfleet.gateway;

import io.clawfleet.shared.db.GroupCommit;
import io.clawfleet.shared.store.InboxStore;
import io.vertx.core.Future;
import io.vertx.core.Vertx;

import java.util.Objects;

/**
 * Group commit of the gateway's intake ({@link GroupCommit}): messages that arrive while earlier ones
 * are being committed go into the inbox together, one per chat, through
 * {@link InboxStore#acceptAll}; alone, and whatever a group leaves unsettled (a full backlog, a
 * concurrent send of the same key), through {@link InboxStore#accept(InboxStore.Intake)}. Each caller
 * gets what accepting its message alone would have given.
 */
public final class IntakeBatcher {

    private final GroupCommit<InboxStore.Intake, InboxStore.Accepted> group;

    public IntakeBatcher(Vertx vertx, InboxStore inbox, int maxBatch, int maxInFlight) {
        Objects.requireNonNull(inbox);
        this.group = new GroupCommit<>(vertx, inbox::accept,
                intakes -> inbox.acceptAll(intakes, intakes.get(0).maxUnanswered())
                        .map(accepted -> accepted.stream().map(a -> a == null ? null : Future.succeededFuture(a)).toList()),
                in -> in.tenantId() + '\u0000' + in.botId() + '\u0000' + in.channel() + '\u0000' + in.chatKey(),
                InboxStore.Intake::maxUnanswered, maxBatch, maxInFlight);
    }

    /** Accepts a message (its own backlog limit applies); completes on the caller's context once committed. */
    public Future<InboxStore.Accepted> accept(InboxStore.Intake intake) {
        return group.submit(intake);
    }

    /** Intake statements issued so far, groups and single messages alike (a counter). */
    public long commits() {
        return group.commits();
    }

    /** Messages waiting for a commit (a gauge). */
    public int queued() {
        return group.queued();
    }
}
