package io.clawfleet.worker.llm;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.Consumers;
import io.clawfleet.shared.db.DatabaseFailures;
import io.clawfleet.shared.message.TenantChanged;
import io.clawfleet.shared.provider.BotProviders;
import io.clawfleet.shared.security.EgressGuard;
import io.clawfleet.shared.store.BotProviderStore;
import io.clawfleet.shared.store.BotRef;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.Message;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * Which models answer a bot (issue 14): its tenant's own providers when the bot has some ({@code bot_providers}),
 * else the operator's ({@code llm.*}) when the operator lets the tenant use them, else none (the call fails saying
 * so). Each bot's router is built once, with its own HTTP clients and circuit breakers (one tenant's failing
 * endpoint never opens another's circuit), and kept until the gateway announces a change of the tenant or a minute
 * passes; routers dropped are closed once calls that may still use them are over. Tenant endpoints go through the
 * {@link EgressGuard} on every connection. Event-loop confined, like the router.
 */
public final class BotModels {

    private static final Logger LOG = LoggerFactory.getLogger(BotModels.class);
    private static final long TTL_NANOS = TimeUnit.MINUTES.toNanos(1);

    /** What answers one bot: a router and the prices of its providers (null = the operator's, unpriced). */
    private record Choice(ModelRouter router, BotProviders own, String refusal, long loadedAt) {
    }

    private final Vertx vertx;
    private final BotProviderStore store;
    private final ModelRouter operator;
    private final Map<String, BotProviders.Price> operatorPrices;
    private final EgressGuard egress;
    private final int circuitFailures;
    private final long circuitCooldownMs;
    private final long closeGraceMs;
    private final int capacity;
    private final Map<BotRef, Choice> choices = new LinkedHashMap<>(16, 0.75f, true);
    private final Map<BotRef, Future<Choice>> loading = new LinkedHashMap<>();

    /**
     * @param operator       the cluster's providers and roles
     * @param operatorPrices the prices of the cluster's providers, by name (those without one are unpriced)
     * @param closeGraceMs how long a dropped router stays open for calls already under way (a turn's timeout)
     * @param capacity     bots whose routers are kept at once; the least recently used is dropped past it
     */
    public BotModels(Vertx vertx, BotProviderStore store, ModelRouter operator, Map<String, BotProviders.Price> operatorPrices,
                     EgressGuard egress, int circuitFailures, long circuitCooldownMs, long closeGraceMs, int capacity) {
        this.operatorPrices = Map.copyOf(operatorPrices);
        this.vertx = Objects.requireNonNull(vertx);
        this.store = Objects.requireNonNull(store);
        this.operator = Objects.requireNonNull(operator);
        this.egress = Objects.requireNonNull(egress);
        this.circuitFailures = circuitFailures;
        this.circuitCooldownMs = circuitCooldownMs;
        this.closeGraceMs = closeGraceMs;
        this.capacity = capacity;
    }

    /** Listens for changes of tenants (their bots' providers, the operator's switch); call on the worker's event loop. */
    public Future<Void> start() {
        return Consumers.register(vertx, Addresses.TENANT_CHANGED,
                (Message<TenantChanged> message) -> forget(message.body().tenantId())).mapEmpty();
    }

    /**
     * Completes a chat for the bot with the first provider of the role's chain that answers (see
     * {@link ModelRouter#complete}); the response carries its cost when the provider that answered has a price.
     */
    public Future<LlmResponse> complete(BotRef bot, String role, LlmRequest request, StreamSink sink) {
        return choice(bot).compose(choice -> {
            if (choice.refusal() != null) {
                return Future.failedFuture(new LlmException(choice.refusal(), 0, false, -1, null));
            }
            Map<String, BotProviders.Price> prices = choice.own() == null ? operatorPrices : choice.own().prices();
            return choice.router().complete(role, request, sink).map(answer -> priced(prices, answer));
        });
    }

    /** The roles the bot's model calls may name: its own providers' roles, or the operator's. */
    public Future<java.util.Set<String>> roles(BotRef bot) {
        return choice(bot).map(choice -> choice.router() == null ? java.util.Set.of() : choice.router().roles());
    }

    private static LlmResponse priced(Map<String, BotProviders.Price> prices, LlmResponse answer) {
        BotProviders.Price price = answer.provider() == null ? null : prices.get(answer.provider());
        return price == null ? answer
                : answer.withCost(price.costMicros(answer.inputTokens(), answer.outputTokens(), answer.cachedTokens()));
    }

    private Future<Choice> choice(BotRef bot) {
        Choice cached = choices.get(bot);
        if (cached != null && System.nanoTime() - cached.loadedAt() < TTL_NANOS) {
            return Future.succeededFuture(cached);
        }
        Future<Choice> pending = loading.get(bot);
        if (pending != null) {
            return pending; // many turns of one bot starting at once read its providers once
        }
        Future<Choice> load = store.resolve(bot).map(resolved -> {
            if (resolved.own().isPresent()) {
                BotProviders own = resolved.own().get().providers();
                return new Choice(router(own), own, null, System.nanoTime());
            }
            if (resolved.operatorModels()) {
                return new Choice(operator, null, null, System.nanoTime());
            }
            return new Choice(null, null, "bot " + bot.botId() + " has no model provider: its tenant may not use the "
                    + "cluster's models, so it needs providers of its own (PUT /api/v1/bots/" + bot.botId() + "/providers)",
                    System.nanoTime());
        });
        loading.put(bot, load);
        // The database gone is no model failure: passed on as it is, the turn is retried once the database is back
        // (AgentLoop), where an LlmException made it an apology and a dead letter (the chaos run of 2026-12-02).
        return load.andThen(result -> {
            loading.remove(bot);
            if (result.succeeded()) {
                keep(bot, result.result());
            }
        }).recover(failure -> Future.failedFuture(DatabaseFailures.unreachable(failure) ? failure
                : new LlmException("the bot's model providers cannot be read right now: " + failure.getMessage(), 0,
                        !(failure instanceof io.clawfleet.shared.security.SecretException), -1, failure)));
    }

    private ModelRouter router(BotProviders own) {
        Map<String, LlmProvider> providers = new LinkedHashMap<>();
        own.providers().forEach((name, provider) ->
                providers.put(name, LlmProviders.provider(vertx, provider.asModelProvider(), egress)));
        return new ModelRouter(providers, own.roles(), circuitFailures, circuitCooldownMs, () -> System.nanoTime() / 1_000_000);
    }

    private void keep(BotRef bot, Choice choice) {
        Choice previous = choices.put(bot, choice);
        if (previous != null && previous.router() != choice.router()) {
            retire(previous);
        }
        if (choices.size() > capacity) {
            Iterator<Map.Entry<BotRef, Choice>> eldest = choices.entrySet().iterator();
            Choice dropped = eldest.next().getValue();
            eldest.remove();
            retire(dropped);
        }
    }

    private void forget(String tenantId) {
        Iterator<Map.Entry<BotRef, Choice>> entries = choices.entrySet().iterator();
        while (entries.hasNext()) {
            Map.Entry<BotRef, Choice> entry = entries.next();
            if (entry.getKey().tenantId().equals(tenantId)) {
                entries.remove();
                retire(entry.getValue());
            }
        }
    }

    /** Closes a bot's own router once the calls that may be using it are over; the operator's stays. */
    private void retire(Choice choice) {
        if (choice.own() == null || choice.router() == null) {
            return;
        }
        vertx.setTimer(Math.max(1, closeGraceMs), id -> choice.router().close()
                .onFailure(e -> LOG.debug("a bot's model clients did not close cleanly: {}", e.toString())));
    }

    /** Bots whose routers are kept now, for tests. */
    int cached() {
        return choices.size();
    }
}
