package io.clawfleet.gateway.http;

import io.clawfleet.shared.store.BotRef;
import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.gateway.Ingest;
import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.json.Json;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.store.DeadLetter;
import io.clawfleet.shared.store.DeadLetterStore;
import io.clawfleet.shared.store.OutboxStore;
import io.clawfleet.shared.store.Tenant;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.util.Objects;

/**
 * {@code GET /api/v1/dead-letters} and {@code POST /api/v1/dead-letters/{id}/replay} (seed 000
 * {@code bus.dead_letter.list/replay}). Replaying a failed message sends it again into its chat as a
 * new message whose idempotency key is the dead letter's id: it is answered in the chat's order, and
 * replaying twice answers once. Replaying an undeliverable reply puts it back in the delivery queue.
 */
public final class DeadLettersApi {

    private final DeadLetterStore deadLetters;
    private final OutboxStore outbox;
    private final Ingest ingest;

    public DeadLettersApi(DeadLetterStore deadLetters, OutboxStore outbox, Ingest ingest) {
        this.deadLetters = Objects.requireNonNull(deadLetters);
        this.outbox = Objects.requireNonNull(outbox);
        this.ingest = Objects.requireNonNull(ingest);
    }

    public void list(RoutingContext ctx) {
        Tenant tenant = ApiKeyAuth.tenant(ctx);
        long after = MessagesApi.queryLong(ctx, "after", 0, 0, Long.MAX_VALUE);
        int limit = (int) MessagesApi.queryLong(ctx, "limit", 100, 1, 1_000);
        deadLetters.list(BotScope.bot(ctx), after, limit).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("dead letters cannot be read right now (database unavailable)", 1));
                return;
            }
            JsonArray items = new JsonArray();
            result.result().forEach(letter -> items.add(json(letter)));
            ctx.json(new JsonObject().put("deadLetters", items));
        });
    }

    public void replay(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        long id;
        try {
            id = Long.parseLong(ctx.pathParam("id"));
        } catch (NumberFormatException e) {
            throw ApiException.badRequest("dead letter id must be a number, got '" + ctx.pathParam("id") + "'");
        }
        deadLetters.get(bot, id).compose(found -> {
            if (found.isEmpty()) {
                return Future.failedFuture(ApiException.notFound("no dead letter " + id + " for this bot"));
            }
            DeadLetter letter = found.get();
            Future<JsonObject> replayed = "inbound".equals(letter.kind()) ? replayMessage(bot, letter) : requeueReply(letter);
            return replayed.compose(body -> deadLetters.markReplayed(id).map(body));
        }).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(result.cause() instanceof ApiException ? result.cause()
                        : ApiException.unavailable("the dead letter cannot be replayed", result.cause(), 1));
                return;
            }
            ctx.response().setStatusCode(202).putHeader("content-type", "application/json").end(result.result().encode());
        });
    }

    private Future<JsonObject> replayMessage(BotRef bot, DeadLetter letter) {
        InboundMessage original = Json.fromString(letter.payload().encode(), InboundMessage.class);
        return ingest.accept(bot, original.channel(), original.chatKey(), "replay:" + letter.id(),
                original.senderId(), original.text(), null).map(accepted -> new JsonObject()
                .put("deadLetter", letter.id())
                .put("replayOf", letter.refId())
                .put("id", Long.toString(accepted.message().id()))
                .put("chatId", original.chatKey())
                .put("partition", accepted.message().partition())
                .put("seq", accepted.message().seq()));
    }

    private Future<JsonObject> requeueReply(DeadLetter letter) {
        return outbox.requeue(letter.refId()).map(found -> {
            if (!found) {
                throw ApiException.notFound("the reply " + letter.refId() + " of dead letter " + letter.id() + " no longer exists");
            }
            return new JsonObject().put("deadLetter", letter.id()).put("requeued", letter.refId());
        });
    }

    public static JsonObject json(DeadLetter letter) {
        JsonObject json = new JsonObject()
                .put("id", letter.id())
                .put("kind", letter.kind())
                .put("refId", letter.refId())
                .put("error", letter.error())
                .put("attempts", letter.attempts())
                .put("createdAt", letter.createdAt().toString())
                .put("replayedAt", letter.replayedAt() == null ? null : letter.replayedAt().toString());
        if ("inbound".equals(letter.kind())) {
            json.put("chatId", letter.payload().getString("chatKey"))
                    .put("channel", letter.payload().getString("channel"))
                    .put("text", letter.payload().getString("text"));
        }
        return json;
    }
}
