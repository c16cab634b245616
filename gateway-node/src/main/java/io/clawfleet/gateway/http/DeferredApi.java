package io.clawfleet.gateway.http;

import io.clawfleet.gateway.Ingest;
import io.clawfleet.gateway.admission.TokenQuotas;
import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.DeferredStore;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.time.Clock;
import java.util.List;
import java.util.Objects;

/**
 * A bot's messages kept aside while its tenant was over a quota (issue 14): {@code GET /api/v1/deferred} lists them
 * (oldest first; {@code afterId}, {@code limit}), {@code POST /api/v1/deferred/replay} puts them into the inbox in the
 * order they came, up to {@value #REPLAY_BATCH} per call, once the tenant is within its quotas again (429
 * {@code insufficient_quota} while it is not). Each keeps the idempotency key it would have had, so a replay that is
 * repeated, or cut short and called again, makes one inbox row per message. Messages not replayed expire after
 * {@link DeferredStore#TTL}.
 */
public final class DeferredApi {

    static final int REPLAY_BATCH = 1_000;
    private static final int PAGE = 100;

    private final DeferredStore deferred;
    private final TokenQuotas quotas;
    private final Ingest ingest;
    private final Clock clock;

    public DeferredApi(DeferredStore deferred, TokenQuotas quotas, Ingest ingest, Clock clock) {
        this.deferred = Objects.requireNonNull(deferred);
        this.quotas = Objects.requireNonNull(quotas);
        this.ingest = Objects.requireNonNull(ingest);
        this.clock = Objects.requireNonNull(clock);
    }

    public void list(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        long afterId = afterId(ctx.request().getParam("afterId"));
        int limit = Paging.limit(ctx.request().getParam("limit"), PAGE, 1_000);
        Future.all(deferred.list(bot, afterId, limit), deferred.count(bot)).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("deferred messages cannot be read", result.cause(), 1));
                return;
            }
            List<DeferredStore.Deferred> page = result.result().resultAt(0);
            JsonArray items = new JsonArray();
            page.forEach(d -> items.add(d.toJson()));
            ctx.json(new JsonObject().put("total", result.result().<Long>resultAt(1)).put("deferred", items)
                    .put("nextAfterId", page.size() < limit ? null : page.getLast().id()));
        });
    }

    public void replay(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        quotas.check(bot.tenantId()).compose(over -> over != null
                        ? Future.failedFuture(TokenQuotas.refusal(over, clock.instant()))
                        : deferred.list(bot, 0, REPLAY_BATCH).compose(batch -> replay(bot, batch, 0, 0)))
                .compose(replayed -> deferred.count(bot).map(left -> new JsonObject().put("replayed", replayed).put("remaining", left)))
                .onComplete(result -> {
                    if (result.failed()) {
                        ctx.fail(result.cause() instanceof ApiException api ? api
                                : ApiException.unavailable("deferred messages cannot be replayed right now", result.cause(), 1));
                    } else {
                        ctx.json(result.result());
                    }
                });
    }

    private static long afterId(String raw) {
        if (raw == null) {
            return 0;
        }
        try {
            long id = Long.parseLong(raw);
            if (id >= 0) {
                return id;
            }
        } catch (NumberFormatException e) {
            // the answer below
        }
        throw ApiException.badRequest("parameter 'afterId' must be a whole number from 0 (the nextAfterId of the page before)");
    }

    /** One message after the other, in order: into the inbox, then out of the deferred table. */
    private Future<Integer> replay(BotRef bot, List<DeferredStore.Deferred> batch, int index, int done) {
        if (index >= batch.size()) {
            return Future.succeededFuture(done);
        }
        DeferredStore.Deferred d = batch.get(index);
        return ingest.accept(bot, d.channel(), d.chatKey(), d.idempotencyKey(), d.senderId(), d.text(), null)
                .compose(accepted -> deferred.remove(bot, d.id()))
                .compose(v -> replay(bot, batch, index + 1, done + 1))
                // A refusal part way (the chat's backlog, the node's admission) stops the replay; the rest stay for later.
                .recover(failure -> done > 0 && failure instanceof ApiException ? Future.succeededFuture(done) : Future.failedFuture(failure));
    }
}
