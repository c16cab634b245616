package io.clawfleet.gateway.admission;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.metrics.Metrics;

import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Decides whether a gateway takes a message now: a bound on intake requests in progress (503 when
 * overloaded), then the tenant's and the chat's rate limits (429). Each refusal carries
 * Retry-After, so a burst far beyond capacity turns into quick, clear rejections, never into
 * timeouts or unbounded queues.
 */
public final class Admission {

    /** An admitted request; {@link #close()} it when its intake is done. */
    public interface Ticket extends AutoCloseable {
        @Override
        void close();
    }

    private static final int MAX_KEYS = 200_000;

    private final ClawfleetConfig.Limits limits;
    private final Metrics metrics;
    private final AtomicInteger inflight = new AtomicInteger();
    private final RateLimiter chats;
    private final RateLimiter tenants;

    public Admission(ClawfleetConfig.Limits limits, Metrics metrics) {
        this.limits = Objects.requireNonNull(limits);
        this.metrics = Objects.requireNonNull(metrics);
        this.chats = limits.chatMessagesPerMinute() > 0
                ? new RateLimiter(limits.chatMessagesPerMinute(), 1, TimeUnit.MINUTES, MAX_KEYS) : null;
        this.tenants = limits.tenantMessagesPerSecond() > 0
                ? new RateLimiter(limits.tenantMessagesPerSecond(), 1, TimeUnit.SECONDS, MAX_KEYS) : null;
        metrics.gauge("clawfleet.gateway.inflight", inflight::get);
    }

    /** Admits one message for the chat or throws the refusal (503 or 429 with Retry-After). */
    public Ticket admit(String tenantId, String channel, String chatKey) {
        if (inflight.incrementAndGet() > limits.maxInflightRequests()) {
            inflight.decrementAndGet();
            metrics.increment("clawfleet.gateway.rejected", "reason", "overloaded");
            throw ApiException.unavailable("this gateway is at capacity (" + limits.maxInflightRequests()
                    + " messages in progress); retry shortly", 1);
        }
        try {
            check(tenants, tenantId, "tenant", "this tenant is sending faster than " + limits.tenantMessagesPerSecond()
                    + " messages per second");
            check(chats, tenantId + '\u0000' + channel + '\u0000' + chatKey, "chat",
                    "this chat is sending faster than " + limits.chatMessagesPerMinute() + " messages per minute");
        } catch (ApiException refused) {
            inflight.decrementAndGet();
            throw refused;
        }
        boolean[] closed = {false};
        return () -> {
            if (!closed[0]) {
                closed[0] = true;
                inflight.decrementAndGet();
            }
        };
    }

    private void check(RateLimiter limiter, String key, String scope, String message) {
        if (limiter == null) {
            return;
        }
        long waitNanos = limiter.tryAcquire(key);
        if (waitNanos > 0) {
            metrics.increment("clawfleet.gateway.rejected", "reason", scope + "_rate");
            long seconds = Math.max(1, TimeUnit.NANOSECONDS.toSeconds(waitNanos + 999_999_999));
            throw new ApiException(429, "rate_limited", message + "; retry in " + seconds + " s", seconds);
        }
    }

    public int inflight() {
        return inflight.get();
    }
}
