package io.clawfleet.gateway.operator;

import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.TenantStore;
import io.vertx.ext.web.RoutingContext;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/**
 * Bearer authentication of the operator ({@code /admin/v1/*}) with {@code CLAWFLEET_OPERATOR_KEY}.
 * The key is compared as a SHA-256 digest in constant time, so neither its length nor its prefix
 * leaks through timing. Without a configured key the operator API is closed on this gateway.
 */
public final class OperatorAuth {

    private final byte[] keyHash;

    /** @param operatorKey the operator's key, or null: every request is refused */
    public OperatorAuth(String operatorKey) {
        this.keyHash = operatorKey == null ? null : TenantStore.hashKey(operatorKey).getBytes(StandardCharsets.US_ASCII);
    }

    public void handle(RoutingContext ctx) {
        if (keyHash == null) {
            ctx.fail(ApiException.unauthorized("the operator API is closed on this gateway: no CLAWFLEET_OPERATOR_KEY is set"));
            return;
        }
        String header = ctx.request().getHeader("authorization");
        if (header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7) || header.length() <= 7) {
            ctx.fail(ApiException.unauthorized("missing operator key: send the header 'Authorization: Bearer <operator key>'"));
            return;
        }
        if (!matches(header.substring(7).strip())) {
            ctx.fail(ApiException.unauthorized("invalid operator key"));
            return;
        }
        ctx.next();
    }

    /** Whether {@code key} is the operator's key (compared in constant time, as hashes); false when none is set. */
    public boolean matches(String key) {
        if (keyHash == null || key == null) {
            return false;
        }
        return MessageDigest.isEqual(TenantStore.hashKey(key).getBytes(StandardCharsets.US_ASCII), keyHash);
    }
}
