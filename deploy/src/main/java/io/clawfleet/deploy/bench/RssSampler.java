package io.clawfleet.deploy.bench;

import io.clawfleet.deploy.chaos.ClusterHarness;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Samples the resident memory of every node (and PostgreSQL) four times a second and keeps the peaks. */
final class RssSampler implements AutoCloseable {

    static final String POSTGRES = "postgresql (all processes)";

    private final Map<String, Long> peakKib = new ConcurrentHashMap<>();
    private final Thread thread;
    private volatile boolean running = true;

    RssSampler(Map<String, ClusterHarness.Node> nodes, PostgresStats pg) {
        thread = Thread.ofPlatform().daemon().name("bench-rss").start(() -> {
            while (running) {
                nodes.forEach((id, node) -> peakKib.merge(id, ProcessStats.rssKib(node.pid()), Math::max));
                peakKib.merge(POSTGRES, pg.serverRssKib(), Math::max);
                try {
                    Thread.sleep(250);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
    }

    /** Peak RSS in MiB. */
    double peakMib(String id) {
        return peakKib.getOrDefault(id, -1024L) / 1024.0;
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        thread.interrupt();
        thread.join(2_000);
    }
}
