package io.clawfleet.gateway.discord;

import io.vertx.core.MultiMap;

import java.util.HashMap;
import java.util.Map;

/**
 * Discord's rate limits as its answers state them, per bot account: each route (method, path, major parameter) maps to
 * a bucket ({@code X-RateLimit-Bucket}) that has {@code X-RateLimit-Remaining} requests until {@code
 * X-RateLimit-Reset-After} seconds from the answer; a {@code 429} names the wait ({@code retry_after}) and whether it
 * holds for every route of the bot ({@code global}). A send reserves one request of its bucket before it goes, so
 * concurrent sends of one gateway do not all rush into a bucket's last slot. Per gateway (Discord's own {@code 429}
 * covers the rest); a bucket not seen yet, or past its reset, is free.
 */
final class DiscordRateLimits {

    private static final int MAX_ENTRIES = 100_000;

    private static final class Bucket {
        int remaining;
        long resetAt;

        Bucket(int remaining, long resetAt) {
            this.remaining = remaining;
            this.resetAt = resetAt;
        }
    }

    /** account + route -> bucket id (Discord's hash, with the major parameter, as routes sharing a hash differ by it). */
    private final Map<String, String> routes = new HashMap<>();
    private final Map<String, Bucket> buckets = new HashMap<>();
    private final Map<Long, Long> globalUntil = new HashMap<>();

    /**
     * Reserves a request on a route.
     *
     * @return nanoseconds to wait before sending (0: at once)
     */
    synchronized long reserve(long accountId, String route, long now) {
        long wait = Math.max(0, globalUntil.getOrDefault(accountId, now) - now);
        String bucketId = routes.get(accountId + " " + route);
        Bucket bucket = bucketId == null ? null : buckets.get(bucketId);
        if (bucket == null) {
            return wait;
        }
        if (now >= bucket.resetAt) {
            return wait; // reset since its last answer; that answer will say how many remain
        }
        if (bucket.remaining > 0) {
            bucket.remaining--;
            return wait;
        }
        return Math.max(wait, bucket.resetAt - now);
    }

    /** What an answer said of its route's bucket. */
    synchronized void update(long accountId, String route, MultiMap headers, long now) {
        String hash = headers.get("x-ratelimit-bucket");
        String remaining = headers.get("x-ratelimit-remaining");
        String resetAfter = headers.get("x-ratelimit-reset-after");
        if (hash == null || remaining == null || resetAfter == null) {
            return;
        }
        try {
            if (routes.size() > MAX_ENTRIES) {
                routes.clear();
                buckets.clear();
            }
            String bucketId = accountId + ":" + hash + ":" + major(route);
            routes.put(accountId + " " + route, bucketId);
            long reset = now + (long) (Double.parseDouble(resetAfter) * 1e9);
            buckets.put(bucketId, new Bucket(Integer.parseInt(remaining), reset));
        } catch (NumberFormatException ignored) {
            // a header we cannot read: Discord's 429 still says when to come back
        }
    }

    /** A {@code 429}: the route's bucket (or, {@code global}, every route of the account) is closed for the wait. */
    synchronized void limited(long accountId, String route, boolean global, long retryAfterMs, long now) {
        long until = now + retryAfterMs * 1_000_000;
        if (global) {
            globalUntil.merge(accountId, until, Math::max);
            return;
        }
        String bucketId = routes.computeIfAbsent(accountId + " " + route, r -> accountId + ":?:" + r);
        buckets.put(bucketId, new Bucket(0, until));
    }

    /** The route's major parameter (the channel), which separates buckets that share Discord's hash. */
    private static String major(String route) {
        int channels = route.indexOf("/channels/");
        if (channels < 0) {
            return "";
        }
        int start = channels + "/channels/".length();
        int end = route.indexOf('/', start);
        return end < 0 ? route.substring(start) : route.substring(start, end);
    }
}
