package io.clawfleet.shared.store;

import io.vertx.core.json.JsonObject;

import java.time.Instant;

/**
 * Work that failed for good, with its error.
 *
 * @param kind    {@code inbound} (a message whose turn failed) or {@code outbound} (a reply that could not be delivered)
 * @param refId   the inbox id or outbox id it concerns
 * @param payload what is needed to replay it
 */
public record DeadLetter(long id, String tenantId, String kind, String refId, Long chatId, JsonObject payload,
                         String error, int attempts, Instant createdAt, Instant replayedAt) {
}
