package io.clawfleet.gateway.http;

import io.clawfleet.gateway.auth.ApiKeyAuth;
import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.TenantChanged;
import io.clawfleet.shared.schedule.Schedule;
import io.clawfleet.shared.schedule.ScheduleException;
import io.clawfleet.shared.store.Tenant;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.store.UsageStore;
import io.vertx.core.eventbus.EventBus;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;

/**
 * The tenant's own settings ({@code GET/PUT /api/v1/settings}: the bot's autonomy level, memory
 * scope and time zone) and its token usage ({@code GET /api/v1/usage}).
 */
public final class TenantApi {

    private static final Set<String> SETTINGS = Set.of("autonomy", "memoryScope", "timeZone");
    private static final Set<String> AUTONOMY = Set.of("read_only", "supervised", "full");
    private static final Set<String> MEMORY_SCOPES = Set.of("chat", "global");

    private final TenantStore tenants;
    private final UsageStore usage;
    private final EventBus bus;
    private final String defaultAutonomy;
    private final String defaultMemoryScope;

    public TenantApi(TenantStore tenants, UsageStore usage, EventBus bus, String defaultAutonomy,
                     String defaultMemoryScope) {
        this.tenants = Objects.requireNonNull(tenants);
        this.usage = Objects.requireNonNull(usage);
        this.bus = Objects.requireNonNull(bus);
        this.defaultAutonomy = Objects.requireNonNull(defaultAutonomy);
        this.defaultMemoryScope = Objects.requireNonNull(defaultMemoryScope);
    }

    public void getSettings(RoutingContext ctx) {
        tenants.settingsAndZone(ApiKeyAuth.tenant(ctx).id()).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("settings cannot be read right now (database unavailable)", 1));
                return;
            }
            ctx.json(effective(result.result()));
        });
    }

    public void putSettings(RoutingContext ctx) {
        Tenant tenant = ApiKeyAuth.tenant(ctx);
        JsonRequest body = JsonRequest.parse(ctx, SETTINGS);
        JsonObject changes = new JsonObject();
        String autonomy = body.optionalString("autonomy", 32);
        if (autonomy != null) {
            String value = autonomy.toLowerCase(Locale.ROOT);
            if (!AUTONOMY.contains(value)) {
                throw ApiException.badRequest("field 'autonomy' must be read_only, supervised or full, got '" + autonomy + "'");
            }
            changes.put("autonomy", value);
        }
        String memoryScope = body.optionalString("memoryScope", 16);
        if (memoryScope != null) {
            if (!MEMORY_SCOPES.contains(memoryScope)) {
                throw ApiException.badRequest("field 'memoryScope' must be chat or global, got '" + memoryScope + "'");
            }
            changes.put("memoryScope", memoryScope);
        }
        String timeZone = timeZone(body.optionalString("timeZone", 64));
        tenants.updateSettings(tenant.id(), changes, timeZone).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("settings cannot be saved right now (database unavailable)", 1));
                return;
            }
            bus.publish(Addresses.TENANT_CHANGED, new TenantChanged(tenant.id()));
            ctx.json(effective(result.result()));
        });
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

    private JsonObject effective(TenantStore.Settings stored) {
        return new JsonObject().put("autonomy", stored.values().getString("autonomy", defaultAutonomy))
                .put("memoryScope", stored.values().getString("memoryScope", defaultMemoryScope))
                .put("timeZone", stored.timeZone());
    }

    public void usage(RoutingContext ctx) {
        Tenant tenant = ApiKeyAuth.tenant(ctx);
        Instant until = instant(ctx, "until", Instant.now().plus(1, ChronoUnit.SECONDS));
        Instant since = instant(ctx, "since", until.minus(30, ChronoUnit.DAYS));
        String chatId = ctx.request().getParam("chatId");
        String channel = ctx.request().getParam("channel", "api");
        usage.totals(tenant.id(), since, until, channel, chatId).onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("usage cannot be read right now (database unavailable)", 1));
                return;
            }
            long input = 0;
            long output = 0;
            long turns = 0;
            for (JsonObject row : result.result()) {
                input += row.getLong("inputTokens");
                output += row.getLong("outputTokens");
                turns += row.getLong("turns");
            }
            ctx.json(new JsonObject().put("since", since.toString()).put("until", until.toString())
                    .put("usage", new JsonArray(result.result()))
                    .put("total", new JsonObject().put("inputTokens", input).put("outputTokens", output).put("turns", turns)));
        });
    }

    private static Instant instant(RoutingContext ctx, String name, Instant defaultValue) {
        String raw = ctx.request().getParam(name);
        if (raw == null || raw.isBlank()) {
            return defaultValue;
        }
        try {
            return Instant.parse(raw);
        } catch (DateTimeParseException e) {
            throw ApiException.badRequest("query parameter '" + name + "' must be an ISO-8601 instant like 2026-11-22T00:00:00Z");
        }
    }
}
