package io.clawfleet.shared.testing;

import io.vertx.core.Future;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** Bounded waits for tests: every wait has a timeout and says what it waited for. */
public final class Await {

    private Await() {
    }

    public static <T> T result(Future<T> future) {
        return result(future, Duration.ofSeconds(30));
    }

    public static <T> T result(Future<T> future, Duration timeout) {
        try {
            return future.toCompletionStage().toCompletableFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new IllegalStateException(e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("future did not complete within " + timeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    public static Throwable failure(Future<?> future) {
        try {
            future.toCompletionStage().toCompletableFuture().get(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            return e.getCause();
        } catch (Exception e) {
            throw new AssertionError("future did not fail within 30 s", e);
        }
        throw new AssertionError("expected the future to fail, but it succeeded");
    }

    public static void until(String what, Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout + " waiting for " + what);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }
}
