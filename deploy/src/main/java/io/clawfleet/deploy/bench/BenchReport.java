package io.clawfleet.deploy.bench;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The figures of a run, in the order measured: printed as a table and kept as JSON. */
public final class BenchReport {

    /** One figure; target is empty when the issue sets none. */
    public record Row(String name, double value, String unit, String target) {
    }

    private final List<Row> rows = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();
    private final JsonObject conditions = new JsonObject();

    void add(String name, double value, String unit, String target) {
        rows.add(new Row(name, value, unit, target));
    }

    void add(String name, double value, String unit) {
        add(name, value, unit, "");
    }

    void note(String text) {
        notes.add(text);
    }

    void condition(String key, Object value) {
        conditions.put(key, value);
    }

    public List<Row> rows() {
        return List.copyOf(rows);
    }

    /** The value of the first row with this name, or NaN. */
    public double value(String name) {
        return rows.stream().filter(r -> r.name().equals(name)).mapToDouble(Row::value).findFirst().orElse(Double.NaN);
    }

    public String table() {
        StringBuilder out = new StringBuilder();
        out.append("conditions: ").append(conditions.encode()).append('\n');
        int width = rows.stream().mapToInt(r -> r.name().length()).max().orElse(10);
        for (Row row : rows) {
            out.append(String.format(Locale.ROOT, "  %-" + width + "s  %12s %-8s %s%n", row.name(), format(row.value()),
                    row.unit(), row.target().isEmpty() ? "" : "(target " + row.target() + ")"));
        }
        notes.forEach(n -> out.append("  note: ").append(n).append('\n'));
        return out.toString();
    }

    public JsonObject toJson() {
        JsonArray figures = new JsonArray();
        rows.forEach(r -> figures.add(new JsonObject().put("name", r.name()).put("value", r.value()).put("unit", r.unit())
                .put("target", r.target())));
        return new JsonObject().put("conditions", conditions).put("figures", figures).put("notes", new JsonArray(notes));
    }

    private static String format(double value) {
        if (value == Math.rint(value) && Math.abs(value) < 1e12) {
            return Long.toString((long) value);
        }
        return String.format(Locale.ROOT, Math.abs(value) < 10 ? "%.3f" : "%.1f", value);
    }
}
