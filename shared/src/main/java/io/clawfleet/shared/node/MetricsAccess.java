package io.clawfleet.shared.node;

import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.core.Handler;
import io.vertx.ext.web.RoutingContext;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Who may read {@code /metrics} on a node's public HTTP port: a caller with the metrics key ({@code metricsKey}) or
 * the operator's key ({@code operatorKey}), as a bearer token. Metrics name members, partitions, queue depths and
 * tenants' traffic, so they are not for anyone who reaches the port (docs/SECURITY.md#the-edge). Keys are compared as
 * SHA-256 digests in constant time. The management listener ({@code http.management.port}), bound to a private
 * interface, serves them without a key instead.
 */
final class MetricsAccess implements Handler<RoutingContext> {

    private final List<byte[]> keyHashes = new ArrayList<>();
    private final boolean managementPort;

    /**
     * @param metricsKey     the metrics key, or null
     * @param operatorKey    the operator's key, or null
     * @param managementPort whether a management listener serves metrics (named in the refusal)
     */
    MetricsAccess(String metricsKey, String operatorKey, boolean managementPort) {
        for (String key : new String[] {metricsKey, operatorKey}) {
            if (key != null) {
                keyHashes.add(TenantStore.hashKey(key).getBytes(StandardCharsets.US_ASCII));
            }
        }
        this.managementPort = managementPort;
    }

    @Override
    public void handle(RoutingContext ctx) {
        String header = ctx.request().getHeader("authorization");
        if (header != null && header.regionMatches(true, 0, "Bearer ", 0, 7) && header.length() > 7) {
            byte[] given = TenantStore.hashKey(header.substring(7).strip()).getBytes(StandardCharsets.US_ASCII);
            boolean match = false;
            for (byte[] hash : keyHashes) {
                // every key is compared, so the time taken does not say which one matched
                match |= MessageDigest.isEqual(given, hash);
            }
            if (match) {
                ctx.next();
                return;
            }
            ctx.fail(ApiException.unauthorized("invalid metrics key"));
            return;
        }
        ctx.fail(ApiException.unauthorized(refusal()));
    }

    private String refusal() {
        if (managementPort) {
            return "/metrics is served on this node's management port (http.management.port); on this port it needs "
                    + "'Authorization: Bearer <metrics key or operator key>'";
        }
        if (keyHashes.isEmpty()) {
            return "/metrics is closed on this node: set CLAWFLEET_METRICS_KEY (scrape with 'Authorization: Bearer <key>') "
                    + "or CLAWFLEET_HTTP_MANAGEMENT_PORT (a listener on a private interface)";
        }
        return "missing metrics key: send the header 'Authorization: Bearer <metrics key or operator key>'";
    }

    static MetricsAccess of(io.clawfleet.shared.config.ClawfleetConfig config) {
        Objects.requireNonNull(config);
        return new MetricsAccess(config.security().metricsKey(), config.security().operatorKey(),
                config.http().managementPort() > 0);
    }
}
