package io.clawfleet.gateway.http;

import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.http.HttpErrors;
import io.clawfleet.shared.store.LimitReachedException;

/**
 * Which failures the gateway's handlers pass on as they are, for {@link HttpErrors} to answer ({@link ApiException}s,
 * and {@link LimitReachedException}: 409 {@code limit_reached} naming the limit), rather than turning them into an
 * answer of their own.
 */
public final class GatewayErrors {

    private GatewayErrors() {
    }

    /** Whether {@code failure} is answered at the edge as it is. */
    public static boolean answered(Throwable failure) {
        return failure instanceof ApiException || failure instanceof LimitReachedException;
    }
}
