package io.clawfleet.deploy.bench;

import java.util.Arrays;

/** End-to-end latencies of one phase, in microseconds; percentiles by the nearest-rank method. */
final class Latencies {

    private long[] values = new long[1024];
    private int size;

    void add(long micros) {
        if (size == values.length) {
            values = Arrays.copyOf(values, size * 2);
        }
        values[size++] = micros;
    }

    int count() {
        return size;
    }

    /** The q-quantile (0 &lt; q &lt;= 1) in milliseconds, or 0 when nothing was measured. */
    double percentileMs(double q) {
        if (size == 0) {
            return 0;
        }
        long[] sorted = Arrays.copyOf(values, size);
        Arrays.sort(sorted);
        return sorted[Math.min(size - 1, Math.max(0, (int) Math.ceil(q * size) - 1))] / 1000.0;
    }
}
