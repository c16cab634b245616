package io.clawfleet.deploy;

import io.clawfleet.shared.node.NodeRuntime;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;

/** SIGTERM / Ctrl-C: stop the node gracefully (drain, hand off, leave), bounded in time. */
final class Shutdown {

    private static final Logger LOG = LoggerFactory.getLogger(Shutdown.class);
    /** Longest graceful stop; past it the JVM exits anyway. */
    static final long DRAIN_SECONDS = 30;

    private Shutdown() {
    }

    static void onExit(NodeRuntime runtime, Runnable after) {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                runtime.stop().toCompletionStage().toCompletableFuture().get(DRAIN_SECONDS, TimeUnit.SECONDS);
            } catch (Exception e) {
                LOG.warn("graceful stop did not finish within {} s: {}", DRAIN_SECONDS, e.toString());
            } finally {
                if (after != null) {
                    after.run();
                }
            }
        }, "clawfleet-shutdown"));
    }
}
