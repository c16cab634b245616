package io.clawfleet.gateway.http;

import io.clawfleet.shared.http.ApiException;

/** The {@code limit} query parameter of a cursor-paged list: a whole number from 1 to a maximum. */
public final class Paging {

    private Paging() {
    }

    /** {@code raw} as a page size; {@code defaultLimit} when absent; 400 naming the range otherwise. */
    public static int limit(String raw, int defaultLimit, int maxLimit) {
        if (raw == null) {
            return defaultLimit;
        }
        try {
            int limit = Integer.parseInt(raw);
            if (limit >= 1 && limit <= maxLimit) {
                return limit;
            }
        } catch (NumberFormatException ignored) {
            // refused below
        }
        throw ApiException.badRequest("parameter 'limit' must be a whole number from 1 to " + maxLimit + ", got '" + raw + "'");
    }
}
