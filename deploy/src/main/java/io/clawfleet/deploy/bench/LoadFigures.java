package io.clawfleet.deploy.bench;

import io.clawfleet.deploy.chaos.ClusterHarness;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** Turns a measured load phase and the counters around it into report rows. */
final class LoadFigures {

    private LoadFigures() {
    }

    static void add(BenchReport report, LoadDriver.Phase phase, Map<String, ClusterHarness.Node> nodes,
                    Map<String, Long> cpuBefore, Map<String, Long> cpuAfter,
                    PostgresStats.Snapshot before, PostgresStats.Snapshot after, RssSampler rss) {
        long messages = phase.answered();
        report.add("messages answered", messages, "");
        report.add("errors", phase.errorCount(), "");
        phase.errors().forEach((kind, count) -> report.note("error '" + kind + "': " + count));
        if (phase.notSent() > 0) {
            report.add("sends skipped (too many unanswered)", phase.notSent(), "");
        }
        report.add("throughput", phase.messagesPerSecond(), "msg/s", ">= 2000 (all-in-one, closed loop)");
        report.add("latency p50", phase.latencies().percentileMs(0.50), "ms");
        report.add("latency p90", phase.latencies().percentileMs(0.90), "ms");
        report.add("latency p99", phase.latencies().percentileMs(0.99), "ms", "<= 50 (at 500 msg/s)");
        report.add("latency max", phase.latencies().percentileMs(1.0), "ms");
        if (messages == 0) {
            return;
        }
        double nodesTotal = 0;
        for (String id : nodes.keySet()) {
            double perMessage = (double) (cpuAfter.get(id) - cpuBefore.get(id)) / messages;
            nodesTotal += perMessage;
            report.add("CPU per message, " + id, perMessage, "ms");
        }
        report.add("CPU per message, all nodes", nodesTotal, "ms", "<= 1");
        if (before.cpuMillis() >= 0) {
            double pgPerMessage = (double) (after.cpuMillis() - before.cpuMillis()) / messages;
            report.add("CPU per message, postgresql", pgPerMessage, "ms");
            report.add("CPU per message, nodes + postgresql", nodesTotal + pgPerMessage, "ms");
        }
        for (String id : nodes.keySet()) {
            report.add("RSS under load (peak), " + id, rss.peakMib(id), "MiB");
        }
        report.add("RSS under load (peak), " + RssSampler.POSTGRES, rss.peakMib(RssSampler.POSTGRES), "MiB");
        report.add("postgresql commits per message", (double) (after.commits() - before.commits()) / messages, "");
        if (after.statements() >= 0) {
            report.add("postgresql statements per message", (double) (after.statements() - before.statements()) / messages, "");
            report.note("statements = pg_stat_statements calls in the benchmark database (BEGIN and COMMIT included); "
                    + "each is one request the node sends and waits for, so it bounds round trips from above "
                    + "(pipelined statements can share one network round trip)");
        }
        report.note("commits and statements include background work in the window (lease renewal, delivery scans); "
                + "CPU per message is CPU time used in the window (/proc utime+stime) divided by messages answered");
    }

    /** Each node's CPU milliseconds so far (/proc). */
    static Map<String, Long> cpu(Map<String, ClusterHarness.Node> nodes) {
        Map<String, Long> cpu = new LinkedHashMap<>();
        nodes.forEach((id, node) -> cpu.put(id, ProcessStats.cpuMillis(node.pid())));
        return cpu;
    }

    /** Each node's CPU milliseconds so far by kind of thread (/proc). */
    static Map<String, Map<String, Long>> threadCpu(Map<String, ClusterHarness.Node> nodes) {
        Map<String, Map<String, Long>> cpu = new LinkedHashMap<>();
        nodes.forEach((id, node) -> cpu.put(id, ProcessStats.threadCpuMillis(node.pid())));
        return cpu;
    }

    /** Per node, the kinds of threads that used the most CPU per {@code unit} (message, chat) between the two readings. */
    static void threadNotes(BenchReport report, String unit, Map<String, Map<String, Long>> before,
                            Map<String, Map<String, Long>> after, long count) {
        after.forEach((id, threads) -> {
            StringBuilder line = new StringBuilder("CPU ms per " + unit + " by thread, " + id + ":");
            threads.entrySet().stream()
                    .map(e -> Map.entry(e.getKey(), e.getValue() - before.get(id).getOrDefault(e.getKey(), 0L)))
                    .filter(e -> e.getValue() > 0)
                    .sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(8)
                    .forEach(e -> line.append(String.format(Locale.ROOT, " [%s] %.3f", e.getKey(), e.getValue() / (double) count)));
            report.note(line.toString());
        });
    }
}
