package io.clawfleet.gateway.http;

import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.UsageStore;
import io.clawfleet.shared.store.UsageStore.Dimension;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The range and grouping of a usage request ({@code GET /api/v1/usage}, {@code GET /admin/v1/usage}), checked once
 * for both: {@code from} (inclusive) and {@code to} (exclusive) as ISO-8601 instants or UTC dates, {@code since} and
 * {@code until} as their older names, {@code groupBy} a comma list of day, bot, model, key. A bad one is a 400
 * naming it. Without {@code to}: the start of the next UTC day; without {@code from}: 30 days before {@code to}.
 */
public record UsageRequest(Instant from, Instant to, Set<Dimension> groupBy) {

    /** The longest range one request may sum: a year and a month, so a yearly statement fits, a scan of all history does not. */
    public static final int MAX_DAYS = 400;
    static final int DEFAULT_DAYS = 30;

    /**
     * What usage does not measure yet, and why: said in every answer rather than answered with a made-up zero. Empty
     * since tool runs record their time ({@code toolSeconds}, {@code sandboxSeconds}); the field stays for clients.
     */
    public static final Map<String, String> NOT_MEASURED = Map.of();

    public UsageRequest {
        groupBy = Set.copyOf(groupBy);
    }

    /** The request's parameters, or a 400 {@link ApiException} naming the one that is wrong. */
    public static UsageRequest parse(RoutingContext ctx) {
        Instant to = instant(ctx, "to", "until", false);
        if (to == null) {
            to = LocalDate.now(ZoneOffset.UTC).plusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant();
        }
        Instant from = instant(ctx, "from", "since", true);
        if (from == null) {
            from = to.minus(Duration.ofDays(DEFAULT_DAYS));
        }
        if (!from.isBefore(to)) {
            throw ApiException.badRequest("parameter 'from' (" + from + ") must be before 'to' (" + to + "): 'to' is exclusive");
        }
        if (Duration.between(from, to).compareTo(Duration.ofDays(MAX_DAYS)) > 0) {
            throw ApiException.badRequest("parameters 'from' and 'to' span " + Duration.between(from, to).toDays()
                    + " days; one request sums at most " + MAX_DAYS + " days: ask for the range in parts");
        }
        return new UsageRequest(from, to, groupBy(ctx.queryParam("groupBy")));
    }

    /** The head of an answer: the range and grouping it sums. */
    public JsonObject head() {
        JsonArray dims = new JsonArray();
        groupBy.stream().sorted().forEach(d -> dims.add(d.wireName()));
        JsonObject notMeasured = new JsonObject();
        NOT_MEASURED.forEach(notMeasured::put);
        return new JsonObject().put("from", from.toString()).put("to", to.toString()).put("groupBy", dims)
                .put("notMeasured", notMeasured);
    }

    /**
     * A report's totals and rows, the way both usage routes answer them, and {@code prunedBefore}: for each source the
     * range reaches past the tenant's retention, the instant before which it was pruned (its counts before it are
     * what is left, not what was); empty when the whole range is kept.
     */
    public JsonObject body(UsageStore.Report report) {
        JsonArray rows = new JsonArray();
        report.groups().forEach(group -> rows.add(group.toJson(groupBy)));
        JsonObject pruned = new JsonObject();
        new java.util.TreeMap<>(report.prunedBefore()).forEach((source, at) -> pruned.put(source, at.toString()));
        return new JsonObject().put("totals", report.totals().toJson()).put("rows", rows).put("prunedBefore", pruned);
    }

    /**
     * A parameter under its name or its older alias (not both); an instant ({@code 2026-03-01T12:00:00Z}) or a date
     * ({@code 2026-03-01}: its start, UTC). Null when absent.
     */
    private static Instant instant(RoutingContext ctx, String name, String alias, boolean isFrom) {
        String raw = ctx.request().getParam(name);
        String rawAlias = ctx.request().getParam(alias);
        if (raw != null && rawAlias != null) {
            throw ApiException.badRequest("parameters '" + name + "' and '" + alias + "' are the same; give one");
        }
        String used = raw != null ? name : alias;
        String value = raw != null ? raw : rawAlias;
        if (value == null || value.isBlank()) {
            return null;
        }
        try {
            return value.length() == 10 ? LocalDate.parse(value).atStartOfDay(ZoneOffset.UTC).toInstant() : Instant.parse(value);
        } catch (DateTimeParseException e) {
            throw ApiException.badRequest("parameter '" + used + "' must be an ISO-8601 instant like 2026-03-01T00:00:00Z or a"
                    + " date like 2026-03-01 (UTC; " + (isFrom ? "inclusive" : "exclusive") + "), got '" + value + "'");
        }
    }

    private static Set<Dimension> groupBy(List<String> values) {
        Set<Dimension> dims = EnumSet.noneOf(Dimension.class);
        for (String value : values) {
            for (String name : value.split(",", -1)) {
                String trimmed = name.trim();
                if (trimmed.isEmpty() && value.isBlank()) {
                    continue; // groupBy= : no grouping
                }
                Dimension d = Dimension.of(trimmed);
                if (d == null) {
                    throw ApiException.badRequest("parameter 'groupBy' must be a comma-separated list of day, bot, model"
                            + " and key, got '" + value + "'");
                }
                dims.add(d);
            }
        }
        return dims;
    }
}
