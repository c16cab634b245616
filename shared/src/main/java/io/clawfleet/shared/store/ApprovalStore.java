package io.clawfleet.shared.store;

import io.clawfleet.shared.message.InboundMessage;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.SqlConnection;
import io.vertx.sqlclient.Tuple;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Admins' decisions on tool calls waiting for approval (issue 22). A call waits in
 * {@code pending_approvals} under a public id with the hash of exactly what it would run and an
 * expiry; an admin (the tenant's API, or an admin sender in another chat) decides on it by naming
 * both. The decision is recorded and, in the same transaction, enters the asking chat's inbox as
 * a message of kind {@code approval}, so the chat's owner carries the turn on in the chat's order.
 * The chat that asked never decides on its own call.
 */
public final class ApprovalStore {

    /** What an admin may decide. */
    public enum Decision {
        APPROVE, DENY, ALWAYS;

        public static Decision parse(String value) {
            try {
                return valueOf(value.strip().toUpperCase(Locale.ROOT));
            } catch (RuntimeException e) {
                throw new IllegalArgumentException("decision must be approve, deny or always, got '" + value + "'");
            }
        }

        public String id() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** A call waiting for a decision, as an admin sees it (its arguments are stored redacted). */
    public record Waiting(String approvalId, long chatId, String channel, String chatKey, String tool, JsonObject arguments,
                          String argsHash, String requestedBy, Instant createdAt, Instant expiresAt, String decision,
                          String decidedBy) {

        public JsonObject toJson() {
            return new JsonObject().put("id", approvalId).put("channel", channel).put("chatId", chatKey).put("tool", tool)
                    .put("arguments", arguments).put("argsHash", argsHash).put("requestedBy", requestedBy)
                    .put("createdAt", createdAt.toString()).put("expiresAt", expiresAt.toString())
                    .put("status", decision == null ? "waiting" : decision).put("decidedBy", decidedBy);
        }
    }

    /** The outcome of a decision. */
    public sealed interface Outcome {
        /** Recorded; {@code message} is now in the asking chat's inbox (publish its wake-up). */
        record Decided(Waiting call, InboundMessage message) implements Outcome {
        }

        /** No call of this tenant waits under that id (never did, was answered, or was cancelled by the chat). */
        record NotFound() implements Outcome {
        }

        /** The call's approval window closed. */
        record Expired(Instant at) implements Outcome {
        }

        /** Another admin decided first. */
        record AlreadyDecided(String decision, String by) implements Outcome {
        }

        /** The hash named is not the call's: the decider looked at something else. */
        record Mismatch() implements Outcome {
        }

        /** The chat that asked tried to decide its own call. */
        record OwnChat() implements Outcome {
        }
    }

    private static final String COLUMNS = """
            p.approval_id, c.bot_id, c.channel, c.chat_key, c.partition, p.chat_id, p.tool, p.arguments, p.args_hash, p.requested_by,
            p.created_at, p.expires_at, p.decision, p.decided_by""";

    private final Pool pool;

    public ApprovalStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /** A bot's calls waiting for a decision (or decided and not yet carried on), oldest first. */
    public Future<List<Waiting>> waiting(BotRef bot, int limit) {
        return pool.preparedQuery("SELECT " + COLUMNS + """
                         FROM pending_approvals p JOIN chats c ON c.id = p.chat_id
                        WHERE p.tenant_id = $1 AND c.bot_id = $3 AND p.expires_at > now() ORDER BY p.created_at LIMIT $2""")
                .execute(Tuple.of(bot.tenantId(), limit, bot.botId()))
                .map(rows -> {
                    List<Waiting> out = new ArrayList<>(rows.size());
                    rows.forEach(row -> out.add(waiting(row)));
                    return out;
                });
    }

    /**
     * Records an admin's decision on a waiting call.
     *
     * @param argsHash     the hash of the call the admin decides on; null only when the decider named the call by
     *                     its id in a chat, where the id alone was shown with the call (ids are never reused)
     * @param decidedBy    who decides, for the record and the audit trail
     * @param deciderChat  the chat the decision comes from, or null (the API): it may not be the asking chat
     */
    public Future<Outcome> decide(BotRef bot, String approvalId, Decision decision, String argsHash, String decidedBy,
                                  Long deciderChat) {
        return pool.withTransaction(connection -> connection.preparedQuery("SELECT " + COLUMNS + """
                         FROM pending_approvals p JOIN chats c ON c.id = p.chat_id
                        WHERE p.tenant_id = $1 AND p.approval_id = $2 AND c.bot_id = $3
                          FOR UPDATE OF p""")
                .execute(Tuple.of(bot.tenantId(), approvalId, bot.botId()))
                .compose(rows -> {
                    if (rows.size() == 0) {
                        return Future.succeededFuture(new Outcome.NotFound());
                    }
                    Row row = rows.iterator().next();
                    Waiting call = waiting(row);
                    if (deciderChat != null && deciderChat == row.getLong("chat_id")) {
                        return Future.succeededFuture(new Outcome.OwnChat());
                    }
                    if (call.decision() != null) {
                        return Future.succeededFuture(new Outcome.AlreadyDecided(call.decision(), call.decidedBy()));
                    }
                    if (!call.expiresAt().isAfter(Instant.now())) {
                        return Future.succeededFuture(new Outcome.Expired(call.expiresAt()));
                    }
                    if (argsHash != null && !java.security.MessageDigest.isEqual(argsHash.getBytes(
                            java.nio.charset.StandardCharsets.UTF_8), call.argsHash().getBytes(java.nio.charset.StandardCharsets.UTF_8))) {
                        return Future.succeededFuture(new Outcome.Mismatch());
                    }
                    return record(connection, bot, row, call, decision, decidedBy);
                }));
    }

    private static Future<Outcome> record(SqlConnection connection, BotRef bot, Row row, Waiting call,
                                          Decision decision, String decidedBy) {
        // The decision and its audit row commit together with the message that carries the turn on.
        return connection.preparedQuery("""
                        WITH decided AS (
                          UPDATE pending_approvals SET decision = $3, decided_by = $4, decided_at = now()
                           WHERE tenant_id = $1 AND approval_id = $2
                        )
                        INSERT INTO audit_events (tenant_id, event_type, tool_name, chat_id, channel, chat_key, actor_role,
                                                  outcome, reason, args_json, metadata_json, bot_id)
                        VALUES ($1, 'approval', $5, $6, $7, $8, 'admin', $9, $10, $11, $12, $13)""")
                .execute(Tuple.tuple().addString(bot.tenantId()).addString(call.approvalId()).addString(decision.id())
                        .addString(decidedBy).addString(call.tool()).addLong(call.chatId()).addString(call.channel())
                        .addString(call.chatKey()).addString(decision == Decision.DENY ? "denied" : "success")
                        .addString(decision.id() + " by " + decidedBy).addValue(call.arguments())
                        .addValue(new JsonObject().put("approvalId", call.approvalId()).put("decision", decision.id())
                                .put("decidedBy", decidedBy).put("argsHash", call.argsHash()))
                        .addString(bot.botId()))
                .compose(updated -> InboxStore.accept(connection, new InboxStore.Intake(bot.tenantId(), bot.botId(), call.channel(),
                        call.chatKey(), row.getInteger("partition"), "approval:" + call.approvalId(), "approval",
                        InboundMessage.KIND_APPROVAL, approvalText(call.approvalId(), decision), null, 0, null, null)))
                .map(accepted -> new Outcome.Decided(new Waiting(call.approvalId(), call.chatId(), call.channel(), call.chatKey(),
                        call.tool(), call.arguments(), call.argsHash(), call.requestedBy(), call.createdAt(),
                        call.expiresAt(), decision.id(), decidedBy), accepted.message()));
    }

    /** The text of the message a decision puts in the asking chat's inbox. */
    public static String approvalText(String approvalId, Decision decision) {
        return "/approval " + approvalId + " " + decision.id();
    }

    private static Waiting waiting(Row row) {
        Object args = row.getValue("arguments");
        return new Waiting(row.getString("approval_id"), row.getLong("chat_id"), row.getString("channel"), row.getString("chat_key"),
                row.getString("tool"), args instanceof JsonObject json ? json : new JsonObject(String.valueOf(args)),
                row.getString("args_hash"), row.getString("requested_by"), InboxStore.instant(row, "created_at"),
                InboxStore.instant(row, "expires_at"), row.getString("decision"), row.getString("decided_by"));
    }
}
