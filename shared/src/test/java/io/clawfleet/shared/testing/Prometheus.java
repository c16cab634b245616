package io.clawfleet.shared.testing;

/** Reading a node's {@code /metrics} text (Prometheus exposition format) in tests. */
public final class Prometheus {

    private Prometheus() {
    }

    /**
     * The sum of the values of every sample in {@code text} whose line starts with {@code prefix}: a metric's name, or
     * its name and {@code "{"} to leave out metrics whose names merely start with it. 0 when there is none.
     */
    public static double sum(String text, String prefix) {
        return sum(text, prefix, "");
    }

    /** As {@link #sum(String, String)}, of the samples whose line also contains {@code contains} (a label, say). */
    public static double sum(String text, String prefix, String contains) {
        return text.lines().filter(line -> line.startsWith(prefix) && line.contains(contains))
                .mapToDouble(line -> Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1))).sum();
    }
}
