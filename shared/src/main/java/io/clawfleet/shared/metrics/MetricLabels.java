package io.clawfleet.shared.metrics;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Keeps the {@code tenant} and {@code bot} labels of a node's metrics bounded: the first {@code maxTenants} tenants
 * (and {@code maxBots} bots) the node records something for keep labels of their own; every later one is counted
 * under {@value #OTHER}, a value no tenant or bot id can take (ids start with a letter or digit). The labels whose
 * values tenants name ({@code provider}, {@code model}, {@code role}) keep their first {@value #MAX_NAMED} values each.
 *
 * <p>First come rather than "the busiest": a counter cannot move from one series to another without breaking
 * {@code rate()} over it, and the busiest tenants show up first on a node in practice. A node's set starts empty
 * at each start, so a restart re-admits the tenants active then. The per-tenant truth (usage against limits)
 * is in PostgreSQL and the API, not in labels.
 */
public final class MetricLabels {

    public static final String OTHER = "_other";
    public static final String TENANT = "tenant";
    public static final String BOT = "bot";
    /** Labels whose values tenants can name (their own providers, models and model roles): {@value #MAX_NAMED} each. */
    static final java.util.List<String> NAMED = java.util.List.of("provider", "model", "role");
    static final int MAX_NAMED = 50;

    private final int maxTenants;
    private final int maxBots;
    private final Set<String> tenants = ConcurrentHashMap.newKeySet();
    private final Set<String> bots = ConcurrentHashMap.newKeySet();
    private final java.util.Map<String, Set<String>> named = java.util.Map.of(
            "provider", ConcurrentHashMap.newKeySet(), "model", ConcurrentHashMap.newKeySet(), "role", ConcurrentHashMap.newKeySet());

    public MetricLabels(int maxTenants, int maxBots) {
        if (maxTenants < 1 || maxBots < 1) {
            throw new IllegalArgumentException("maxTenants and maxBots must be at least 1");
        }
        this.maxTenants = maxTenants;
        this.maxBots = maxBots;
    }

    /** No bound (tests that look at one tenant's series). */
    public static MetricLabels unbounded() {
        return new MetricLabels(Integer.MAX_VALUE, Integer.MAX_VALUE);
    }

    /**
     * @param tags key/value pairs
     * @return {@code tags} itself when no label folds, else a copy with {@value #OTHER} in place of the tenant and bot
     *         that are over the bounds (a bot of a folded tenant folds too)
     */
    public String[] fold(String... tags) {
        String[] out = tags;
        int tenantAt = -1;
        int botAt = -1;
        for (int i = 0; i + 1 < tags.length; i += 2) {
            if (TENANT.equals(tags[i])) {
                tenantAt = i + 1;
            } else if (BOT.equals(tags[i])) {
                botAt = i + 1;
            } else if (NAMED.contains(tags[i]) && !admit(named.get(tags[i]), tags[i + 1], MAX_NAMED)) {
                out = writable(out, tags);
                out[i + 1] = OTHER;
            }
        }
        if (tenantAt < 0 && botAt < 0) {
            return out;
        }
        String tenant = tenantAt < 0 ? null : tags[tenantAt];
        boolean tenantFolds = tenant != null && !admit(tenants, tenant, maxTenants);
        boolean botFolds = botAt >= 0 && (tenantFolds || !admit(bots, (tenant == null ? "" : tenant) + '/' + tags[botAt], maxBots));
        if (tenantFolds) {
            out = writable(out, tags);
            out[tenantAt] = OTHER;
        }
        if (botFolds) {
            out = writable(out, tags);
            out[botAt] = OTHER;
        }
        return out;
    }

    private static String[] writable(String[] out, String[] tags) {
        return out == tags ? tags.clone() : out;
    }

    /** Tenants with a label of their own so far. */
    public int tenants() {
        return tenants.size();
    }

    private static boolean admit(Set<String> admitted, String value, int max) {
        if (value == null || value.isEmpty() || value.endsWith("/") || admitted.contains(value)) {
            return true;
        }
        synchronized (admitted) {
            if (admitted.contains(value)) {
                return true;
            }
            if (admitted.size() >= max) {
                return false;
            }
            admitted.add(value);
            return true;
        }
    }
}
