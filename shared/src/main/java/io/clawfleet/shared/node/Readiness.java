package io.clawfleet.shared.node;

import io.vertx.core.json.JsonObject;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/** The parts of a node that must all be up for {@code /readyz} to say ready. */
public final class Readiness {

    private final Map<String, Supplier<Boolean>> checks = new ConcurrentHashMap<>();
    private final Map<String, Supplier<JsonObject>> details = new ConcurrentHashMap<>();

    public void register(String part, Supplier<Boolean> check) {
        checks.put(part, check);
    }

    /** Extra facts a part reports in {@code /readyz} (an isolation level, say). */
    public void detail(String part, Supplier<JsonObject> detail) {
        details.put(part, detail);
    }

    public void unregister(String part) {
        checks.remove(part);
    }

    public boolean ready() {
        if (checks.isEmpty()) {
            return false;
        }
        for (Supplier<Boolean> check : checks.values()) {
            if (!Boolean.TRUE.equals(check.get())) {
                return false;
            }
        }
        return true;
    }

    public JsonObject report() {
        JsonObject parts = new JsonObject();
        checks.forEach((name, check) -> parts.put(name, Boolean.TRUE.equals(check.get()) ? "up" : "down"));
        JsonObject report = new JsonObject().put("status", ready() ? "ready" : "not_ready").put("checks", parts);
        if (!details.isEmpty()) {
            JsonObject extra = new JsonObject();
            details.forEach((name, detail) -> extra.put(name, detail.get()));
            report.put("details", extra);
        }
        return report;
    }
}
