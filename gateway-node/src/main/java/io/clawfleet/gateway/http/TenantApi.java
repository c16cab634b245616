package io.clawfleet.gateway.http;

import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.gateway.auth.BotScope;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.schedule.Schedule;
import io.clawfleet.shared.schedule.ScheduleException;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.BotStore;
import io.clawfleet.shared.store.UsageStore;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * A bot's settings ({@code GET/PUT /api/v1/settings}, {@code /api/v1/bots/{botId}/settings}: the bot's autonomy
 * level, memory scope and default model role, and its tenant's time zone) and its usage
 * ({@code GET /api/v1/usage}, {@code /api/v1/bots/{botId}/usage}).
 */
public final class TenantApi {

    private static final Set<String> SETTINGS = Set.of("autonomy", "memoryScope", "timeZone", "defaultRole", "messagesPerMinute");
    private static final Set<String> BOT_SETTINGS = Set.of("autonomy", "memoryScope", "defaultRole", "messagesPerMinute");
    /** The most a bot's {@code messagesPerMinute} may be, as a tenant's. */
    private static final int MAX_MESSAGES_PER_MINUTE = 1_000_000;
    private static final Set<String> AUTONOMY = Set.of("read_only", "supervised", "full");
    private static final Set<String> MEMORY_SCOPES = Set.of("chat", "global");

    private final BotStore bots;
    private final UsageStore usage;
    private final java.util.function.Consumer<String> tenantChanged;
    private final String defaultAutonomy;
    private final String defaultMemoryScope;
    private final java.util.function.Function<BotRef, Future<Set<String>>> roles;

    /**
     * @param tenantChanged told of a tenant whose settings changed: the gateway drops what it cached of the tenant before
     *                      the answer goes out (the caller's next request sees the change) and tells the other nodes
     * @param roles the model roles a bot's messages may name (its own providers' when it has some, else the cluster's):
     *              what its {@code defaultRole} may name
     */
    public TenantApi(BotStore bots, UsageStore usage, java.util.function.Consumer<String> tenantChanged,
                     String defaultAutonomy, String defaultMemoryScope,
                     java.util.function.Function<BotRef, Future<Set<String>>> roles) {
        this.bots = Objects.requireNonNull(bots);
        this.usage = Objects.requireNonNull(usage);
        this.tenantChanged = Objects.requireNonNull(tenantChanged);
        this.defaultAutonomy = Objects.requireNonNull(defaultAutonomy);
        this.defaultMemoryScope = Objects.requireNonNull(defaultMemoryScope);
        this.roles = Objects.requireNonNull(roles);
    }

    public void getSettings(RoutingContext ctx) {
        bots.settingsAndZone(BotScope.bot(ctx)).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("settings cannot be read right now (database unavailable)", 1));
                return;
            }
            ctx.json(effective(result.result()));
        });
    }

    public void putSettings(RoutingContext ctx) {
        BotRef bot = BotScope.bot(ctx);
        JsonRequest body = JsonRequest.parse(ctx, SETTINGS);
        JsonObject given = body.json().copy();
        given.remove("timeZone");
        JsonObject changes = botSettings(given);
        String timeZone = timeZone(body.optionalString("timeZone", 64));
        roleKnown(bot, changes).compose(v -> bots.updateSettings(bot, changes, timeZone)).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(result.cause() instanceof ApiException api ? api
                        : ApiException.unavailable("settings cannot be saved right now (database unavailable)", 1));
                return;
            }
            tenantChanged.accept(bot.tenantId());
            ctx.json(effective(result.result()));
        });
    }

    /**
     * A bot's settings as a request gives them, checked ({@link #botSettings}) and with a default role the bot has
     * ({@link #roleKnown}): as they are stored, or failed with a 400 {@link ApiException} naming what is wrong.
     */
    public Future<JsonObject> checkedSettings(BotRef bot, JsonObject given) {
        JsonObject changes;
        try {
            changes = botSettings(given);
        } catch (ApiException wrong) {
            return Future.failedFuture(wrong);
        }
        return roleKnown(bot, changes).map(changes);
    }

    /**
     * Checks that the {@code defaultRole} of checked settings ({@link #botSettings}) names a role of the bot: its own
     * providers' roles when it has some, else the cluster's. Fails with a 400 {@link ApiException} naming them.
     */
    public Future<Void> roleKnown(BotRef bot, JsonObject changes) {
        String defaultRole = changes == null ? null : changes.getString("defaultRole");
        return defaultRole == null ? Future.succeededFuture() : roles.apply(bot).compose(known ->
                known.contains(defaultRole) ? Future.<Void>succeededFuture()
                        : Future.failedFuture(ApiException.badRequest("field 'defaultRole' must name a model role of bot "
                                + bot.botId() + " (its own providers' roles when it has some, else this cluster's), one of "
                                + new java.util.TreeSet<>(known) + ", got '" + defaultRole + "'")));
    }

    /**
     * Checks a bot's settings as a request gives them ({@code autonomy}, {@code memoryScope}, {@code defaultRole},
     * {@code messagesPerMinute}) and returns them as stored; throws a 400 {@link ApiException} naming what is wrong.
     * {@code "messagesPerMinute": null} unsets the bot's rate (the store drops settings given as null).
     */
    public JsonObject botSettings(JsonObject given) {
        for (String field : given.fieldNames()) {
            if (!BOT_SETTINGS.contains(field)) {
                throw ApiException.badRequest("unknown setting '" + field + "'; a bot has " + new java.util.TreeSet<>(BOT_SETTINGS));
            }
        }
        JsonObject changes = new JsonObject();
        String autonomy = setting(given, "autonomy", 32);
        if (autonomy != null) {
            String value = autonomy.toLowerCase(Locale.ROOT);
            if (!AUTONOMY.contains(value)) {
                throw ApiException.badRequest("field 'autonomy' must be read_only, supervised or full, got '" + autonomy + "'");
            }
            changes.put("autonomy", value);
        }
        String memoryScope = setting(given, "memoryScope", 16);
        if (memoryScope != null) {
            if (!MEMORY_SCOPES.contains(memoryScope)) {
                throw ApiException.badRequest("field 'memoryScope' must be chat or global, got '" + memoryScope + "'");
            }
            changes.put("memoryScope", memoryScope);
        }
        String defaultRole = setting(given, "defaultRole", 64);
        if (defaultRole != null) {
            changes.put("defaultRole", defaultRole); // whether the bot has that role: roleKnown
        }
        if (given.containsKey("messagesPerMinute")) {
            Object rate = given.getValue("messagesPerMinute");
            if (rate != null && !(rate instanceof Number number && number.doubleValue() == number.longValue()
                    && number.longValue() >= 0 && number.longValue() <= MAX_MESSAGES_PER_MINUTE)) {
                throw ApiException.badRequest("field 'messagesPerMinute' must be a whole number from 0 to "
                        + MAX_MESSAGES_PER_MINUTE + " (null: none), got " + io.vertx.core.json.Json.encode(rate));
            }
            changes.put("messagesPerMinute", rate == null ? null : ((Number) rate).intValue());
        }
        return changes;
    }

    private static String setting(JsonObject given, String field, int maxLength) {
        Object value = given.getValue(field);
        return value == null ? null : JsonRequest.checkString(field, value, maxLength, false);
    }

    /** The canonical IANA id of a zone named in any letter case; null when none was given. */
    private static String timeZone(String zone) {
        if (zone == null) {
            return null;
        }
        try {
            return Schedule.zone(zone).getId();
        } catch (ScheduleException e) {
            throw ApiException.badRequest("field 'timeZone' must be an IANA time zone such as Europe/Berlin or"
                    + " America/New_York, got '" + zone + "'");
        }
    }

    private JsonObject effective(BotStore.Settings stored) {
        return new JsonObject().put("autonomy", stored.values().getString("autonomy", defaultAutonomy))
                .put("memoryScope", stored.values().getString("memoryScope", defaultMemoryScope))
                .put("defaultRole", stored.values().getString("defaultRole"))
                .put("messagesPerMinute", stored.values().getInteger("messagesPerMinute"))
                .put("timeZone", stored.timeZone());
    }

    /**
     * {@code GET /api/v1/usage} (the whole tenant's) and {@code GET /api/v1/bots/{botId}/usage} (one bot's): the
     * measures of {@link UsageStore#report} between {@code from} and {@code to} ({@link UsageRequest}), grouped by
     * {@code groupBy}; {@code chatId} (with {@code channel}, default {@code api}) narrows it to one chat.
     *
     * <p>The fields of the answer before metering stay for the clients that read them: {@code since}, {@code until},
     * {@code total} (tokens and turns) and, without {@code groupBy}, {@code usage} (tokens per day, bot, chat and model,
     * from the calls' own rows: past retention.usageDetailDays they are in the totals only, summed per day).
     */
    public void usage(RoutingContext ctx) {
        BotRef bot = ctx.get(BotScope.BOT);
        String botId = bot == null ? null : bot.botId();
        String tenantId = ApiKeyAuth.tenant(ctx).id();
        UsageRequest request = UsageRequest.parse(ctx);
        if (request.groupBy().contains(UsageStore.Dimension.KEY)
                && !ApiKeyAuth.key(ctx).scopes().contains(io.clawfleet.gateway.auth.Scopes.ADMIN)) {
            // key ids are listed to admins only (GET /api/v1/keys); usage per key would list them to any reader
            throw new ApiException(403, "forbidden", "groupBy=key needs a key with the admin scope: it names the tenant's keys");
        }
        String chatId = ctx.request().getParam("chatId");
        String channel = ctx.request().getParam("channel", "api");
        UsageStore.Query query = new UsageStore.Query(List.of(tenantId), botId, request.from(), request.to(), request.groupBy(),
                channel, chatId);
        Future<List<JsonObject>> detail = request.groupBy().isEmpty()
                ? usage.totals(tenantId, botId, request.from(), request.to(), channel, chatId)
                : Future.succeededFuture(null);
        Future.all(usage.report(query), detail).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("usage cannot be read", result.cause(), 1));
                return;
            }
            UsageStore.Report report = result.result().<Map<String, UsageStore.Report>>resultAt(0).get(tenantId);
            UsageStore.Measures totals = report.totals();
            JsonObject answer = request.head().mergeIn(request.body(report))
                    .put("since", request.from().toString()).put("until", request.to().toString())
                    .put("total", new JsonObject().put("inputTokens", totals.inputTokens())
                            .put("outputTokens", totals.outputTokens()).put("turns", totals.turns()));
            if (detail.result() != null) {
                answer.put("usage", new JsonArray(detail.result()));
            }
            ctx.json(answer);
        });
    }
}
