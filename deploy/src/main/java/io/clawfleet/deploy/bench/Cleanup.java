package io.clawfleet.deploy.bench;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Stops everything a benchmark started, newest first, exactly once: at the end of the run, on a
 * failure, or from a shutdown hook on Ctrl-C (node JVMs and PostgreSQL would outlive us otherwise).
 */
final class Cleanup implements AutoCloseable {

    private final Deque<AutoCloseable> resources = new ArrayDeque<>();
    private final Thread hook = new Thread(this::closeAll, "bench-cleanup");
    private boolean closed;

    Cleanup() {
        Runtime.getRuntime().addShutdownHook(hook);
    }

    synchronized <T extends AutoCloseable> T add(T resource) {
        resources.push(resource);
        return resource;
    }

    private synchronized void closeAll() {
        if (closed) {
            return;
        }
        closed = true;
        while (!resources.isEmpty()) {
            try {
                resources.pop().close();
            } catch (Exception e) {
                System.err.println("bench: could not stop a resource: " + e);
            }
        }
    }

    @Override
    public void close() {
        closeAll();
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // Already shutting down: the hook is running or ran.
        }
    }
}
