package io.clawfleet.gateway.admission;

import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.gateway.auth.ModelName;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.RateWindowStore;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * A tenant's {@code messagesPerMinute} (issue 14), held cluster-wide. Each gateway leases the tenant's tokens of
 * the current minute from PostgreSQL ({@link RateWindowStore}) in chunks of 1 % of the limit (at least 1) and spends
 * them locally, so most messages cost no round trip and the sum over all gateways never passes the limit. Tokens a
 * gateway holds when the minute ends are lost: at most a chunk less than one per gateway and window, so a tenant
 * gets between its limit minus (gateways × chunk) and its limit. Over it, 429 with {@code Retry-After} and the
 * IETF {@code RateLimit-Policy} / {@code RateLimit} headers.
 *
 * <p>Inside the tenant's rate a tenant admin may set narrower ones, held the same way in windows of their own: a
 * key's ({@code messagesPerMinute} of {@code POST /api/v1/keys}) and a bot's (its setting {@code messagesPerMinute}).
 * A message takes a token of the key's rate, then of its bot's, then of the tenant's, so a message refused by a
 * narrower rate spends none of a wider one's tokens (one refused by a wider rate has spent the narrower ones'). All
 * three limits come with the request's key ({@link TenantStore.KeyOwner}, read with the key and cached with it), so
 * checking them reads nothing more; a tenant without key or bot rates is checked exactly as before.
 */
public final class TenantRates {

    private static final long WINDOW_SECONDS = 60;
    /** Buckets of keys and bots kept at most; when full, those whose window ended go. */
    private static final int MAX_SCOPED = 100_000;

    /** Whose rate: the tenant's, one of its keys' or one of its bots'. */
    public enum Kind {
        TENANT("messages", ""), KEY("key-messages", "key:"), BOT("bot-messages", "bot:");

        /** The policy's name in the RateLimit headers. */
        final String policy;
        /** The scope's prefix in {@link RateWindowStore}. */
        final String prefix;

        Kind(String policy, String prefix) {
            this.policy = policy;
            this.prefix = prefix;
        }
    }

    /** One rate of a tenant: its own ({@link #TENANT}), a key's (by id) or a bot's (by id). */
    public record Scope(Kind kind, String id) {

        public static final Scope TENANT = new Scope(Kind.TENANT, "");

        public Scope {
            Objects.requireNonNull(kind);
            Objects.requireNonNull(id);
        }

        public static Scope key(String keyId) {
            return new Scope(Kind.KEY, keyId);
        }

        public static Scope bot(String botId) {
            return new Scope(Kind.BOT, botId);
        }

        /** The scope of its windows in {@link RateWindowStore}. */
        String column() {
            return kind == Kind.TENANT ? RateWindowStore.TENANT : kind.prefix + id;
        }

        /** Whose limit, as a refusal names it. */
        String whose() {
            return switch (kind) {
                case TENANT -> "this tenant";
                case KEY -> "key '" + id + "'";
                case BOT -> "bot '" + id + "'";
            };
        }

        /** Which limit, as a refusal names it. */
        String limitName() {
            return switch (kind) {
                case TENANT -> "its limit 'messagesPerMinute'";
                case KEY -> "the key's 'messagesPerMinute'";
                case BOT -> "the bot's setting 'messagesPerMinute'";
            };
        }
    }

    private record ScopedId(String tenantId, Scope scope) {
    }

    /** One scope's tokens on this gateway (a tenant's, a key's or a bot's). Guarded by itself. */
    private static final class Bucket {
        int tokens;
        /** System.nanoTime() at which the window of {@link #tokens} ends. */
        long windowEnd;
        /** The window's limit is spent (cluster-wide): refuse without asking until it ends. */
        boolean spent;
        /** A lease under way: requests arriving meanwhile wait for it instead of leasing too. */
        Future<Void> leasing;
    }

    private final RateWindowStore windows;
    private final Function<BotRef, Future<Set<String>>> roles;
    /** The tenants' own buckets, by tenant id. */
    private final Map<String, Bucket> buckets = new ConcurrentHashMap<>();
    /** The buckets of keys and bots. */
    private final Map<ScopedId, Bucket> scoped = new ConcurrentHashMap<>();

    /**
     * @param roles the model roles of a bot (BotRoles): on {@code /v1/chat/completions}, a {@code model} without a
     *              slash names a role of the default bot when it has one of that name, else a bot
     */
    public TenantRates(RateWindowStore windows, Function<BotRef, Future<Set<String>>> roles) {
        this.windows = Objects.requireNonNull(windows);
        this.roles = Objects.requireNonNull(roles);
    }

    /**
     * Route handler before message intake: passes when the message gets a token of each rate that holds for it
     * (the key's, the bot's, the tenant's, in this order), or when none does.
     */
    public void handle(RoutingContext ctx) {
        // A request may wait on a lease another event loop started: carry on on the request's own event loop.
        Context context = Vertx.currentContext();
        admit(ctx).onComplete(result -> {
            Runnable carryOn = () -> {
                if (result.succeeded()) {
                    ctx.next();
                } else {
                    ctx.fail(result.cause());
                }
            };
            if (context == null || Vertx.currentContext() == context) {
                carryOn.run();
            } else {
                context.runOnContext(v -> carryOn.run());
            }
        });
    }

    /**
     * One message of the request's key (to the bot its route names): a token of each rate that holds for it, or a
     * failed future with the 429 to answer. It may complete on another event loop than the caller's.
     */
    public Future<Void> admit(RoutingContext ctx) {
        TenantStore.KeyOwner key = ApiKeyAuth.key(ctx);
        Integer limit = key.messagesPerMinute();
        if (key.keyMessagesPerMinute() == null && key.botRates().isEmpty()) {
            return limit == null ? Future.succeededFuture() : admit(key.tenant().id(), limit);
        }
        return admitScoped(ctx, key);
    }

    /** The key's rate, then the bot's, then the tenant's: each that the message has. */
    private Future<Void> admitScoped(RoutingContext ctx, TenantStore.KeyOwner key) {
        String tenantId = key.tenant().id();
        Integer keyLimit = key.keyMessagesPerMinute();
        Integer tenantLimit = key.messagesPerMinute();
        // The bot first, while on the request's event loop: the admissions may complete on another thread.
        return botOf(ctx, key).compose(botId -> {
            Integer botLimit = botId == null ? null : key.botMessagesPerMinute(botId);
            Future<Void> byKey = keyLimit == null ? Future.succeededFuture() : admit(tenantId, Scope.key(key.keyId()), keyLimit);
            return byKey
                    .compose(v -> botLimit == null ? Future.succeededFuture() : admit(tenantId, Scope.bot(botId), botLimit))
                    .compose(v -> tenantLimit == null ? Future.succeededFuture() : admit(tenantId, tenantLimit));
        });
    }

    /**
     * The bot a message is for, when it is one with a rate; else null. A bot's route has it resolved already; on the
     * OpenAI endpoint {@code model} names it ({@link ModelName}). A bad body or a bot the key does not reach
     * is refused after this, by the endpoint: no bot's tokens for it.
     */
    private Future<String> botOf(RoutingContext ctx, TenantStore.KeyOwner key) {
        BotRef resolved = ctx.get(BotScope.BOT);
        if (resolved != null) {
            return Future.succeededFuture(resolved.botId());
        }
        if (key.botRates().isEmpty()) {
            return Future.succeededFuture(null);
        }
        String model = model(ctx);
        if (model == null) {
            return Future.succeededFuture(null);
        }
        Optional<ModelName> qualified = ModelName.qualified(model);
        if (qualified.isPresent()) {
            return Future.succeededFuture(rated(key, qualified.get().botId()));
        }
        if (key.botMessagesPerMinute(BotRef.MAIN) == null && key.botMessagesPerMinute(model) == null) {
            return Future.succeededFuture(null);
        }
        return roles.apply(BotRef.main(key.tenant().id()))
                .map(mainRoles -> rated(key, ModelName.parse(model, mainRoles).botId()))
                .recover(e -> Future.failedFuture(ApiException.unavailable("the bot's message rate cannot be checked right now",
                        e, 1)));
    }

    private static String rated(TenantStore.KeyOwner key, String botId) {
        return key.reaches(botId) && key.botMessagesPerMinute(botId) != null ? botId : null;
    }

    /** The request's {@code model}, or null when the body has none (the endpoint then answers 400). */
    private static String model(RoutingContext ctx) {
        try {
            JsonObject body = ctx.body().asJsonObject();
            return body != null && body.getValue("model") instanceof String model ? model : null;
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** One message of the tenant: a token, or a failed future with the 429 to answer. */
    public Future<Void> admit(String tenantId, int limit) {
        return admit(tenantId, Scope.TENANT, limit);
    }

    /** One message in a scope of the tenant (its own, a key's, a bot's): a token, or a failed future with the 429. */
    public Future<Void> admit(String tenantId, Scope scope, int limit) {
        Bucket bucket = bucket(tenantId, scope);
        Future<Void> waitFor;
        synchronized (bucket) {
            long now = System.nanoTime();
            if (now - bucket.windowEnd >= 0) {
                bucket.tokens = 0;
                bucket.spent = false;
            }
            if (bucket.tokens > 0) {
                bucket.tokens--;
                return Future.succeededFuture();
            }
            if (bucket.spent || limit == 0) {
                return Future.failedFuture(refusal(scope, limit, Math.max(0, bucket.windowEnd - now)));
            }
            if (bucket.leasing == null) {
                Promise<Void> leased = Promise.promise();
                bucket.leasing = leased.future();
                lease(tenantId, scope, limit, bucket, leased);
            }
            waitFor = bucket.leasing;
        }
        // After the lease: take a token if it brought any (or another request took them all: ask again).
        return waitFor.transform(done -> done.failed()
                ? Future.failedFuture(ApiException.unavailable("the message rate of " + scope.whose()
                        + " cannot be checked right now", 1))
                : admitAfterLease(tenantId, scope, limit, bucket));
    }

    private Bucket bucket(String tenantId, Scope scope) {
        if (scope.kind() == Kind.TENANT) {
            return buckets.computeIfAbsent(tenantId, id -> new Bucket());
        }
        if (scoped.size() >= MAX_SCOPED) {
            // What goes held no tokens of a window still running (or a lease under way); dropping it costs no message.
            long now = System.nanoTime();
            scoped.values().removeIf(bucket -> {
                synchronized (bucket) {
                    return bucket.leasing == null && now - bucket.windowEnd >= 0;
                }
            });
        }
        return scoped.computeIfAbsent(new ScopedId(tenantId, scope), id -> new Bucket());
    }

    private Future<Void> admitAfterLease(String tenantId, Scope scope, int limit, Bucket bucket) {
        synchronized (bucket) {
            if (bucket.tokens > 0) {
                bucket.tokens--;
                return Future.succeededFuture();
            }
            if (bucket.spent) {
                return Future.failedFuture(refusal(scope, limit, Math.max(0, bucket.windowEnd - System.nanoTime())));
            }
        }
        return admit(tenantId, scope, limit);
    }

    private void lease(String tenantId, Scope scope, int limit, Bucket bucket, Promise<Void> leased) {
        int chunk = Math.max(1, limit / 100);
        windows.lease(tenantId, scope.column(), chunk, limit).onComplete(result -> {
            synchronized (bucket) {
                bucket.leasing = null;
                if (result.succeeded()) {
                    RateWindowStore.Lease lease = result.result();
                    long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(lease.millisLeft());
                    if (end - bucket.windowEnd > TimeUnit.SECONDS.toNanos(1)) {
                        bucket.tokens = 0; // a new window: what was left of the last one is gone
                    }
                    bucket.windowEnd = end;
                    // a limit lowered within a window may take back more than it grants: never below none
                    bucket.tokens = Math.max(0, bucket.tokens + lease.granted());
                    bucket.spent = lease.granted() <= 0;
                }
            }
            if (result.succeeded()) {
                leased.complete();
            } else {
                leased.fail(result.cause());
            }
        });
    }

    /** 429 of the tenant's rate, saying when the window ends, with the RateLimit headers of the IETF httpapi draft. */
    static ApiException refusal(int limit, long nanosLeft) {
        return refusal(Scope.TENANT, limit, nanosLeft);
    }

    /** 429 of a scope's rate, naming whose limit it is, with its policy in the RateLimit headers. */
    static ApiException refusal(Scope scope, int limit, long nanosLeft) {
        long seconds = Math.max(1, (long) Math.ceil(nanosLeft / 1e9));
        String policy = "\"" + scope.kind().policy + "\"";
        return new ApiException(429, "rate_limit_exceeded", scope.whose() + " may send " + limit + " messages per minute"
                + " (" + scope.limitName() + "), all used in this minute; retry in " + seconds + " s", seconds)
                .withHeader("RateLimit-Policy", policy + ";q=" + limit + ";w=" + WINDOW_SECONDS)
                .withHeader("RateLimit", policy + ";r=0;t=" + seconds);
    }

    /** Drops what this gateway holds of a tenant, its keys and bots (a limit changed): the next message leases anew. */
    public void forget(String tenantId) {
        buckets.remove(tenantId);
        scoped.keySet().removeIf(id -> id.tenantId().equals(tenantId));
    }
}
