package io.clawfleet.shared.store;

/** A tenant has as many of something as its limit allows ({@link TenantLimits}); nothing was stored. */
public final class LimitReachedException extends IllegalArgumentException {

    private final String limit;
    private final long max;

    public LimitReachedException(String limit, int max, String what) {
        this("this tenant may have at most " + max + " " + what + " (its limit '" + limit + "'); remove some, or ask the "
                + "operator to raise the limit", limit, max);
    }

    private LimitReachedException(String message, String limit, long max) {
        super(message);
        this.limit = limit;
        this.max = max;
    }

    /** A write of {@code asked} bytes at {@code path} would grow the tenant's workspace files past its storage limit. */
    public static LimitReachedException storage(long max, long used, String path, long asked) {
        return new LimitReachedException("this tenant's workspace files may hold at most " + max + " bytes in all (its limit '"
                + TenantLimits.STORAGE_BYTES + "'); they hold " + used + " bytes now, and '" + path + "' would take " + asked
                + " bytes; delete or shorten files, or ask the operator to raise the limit", TenantLimits.STORAGE_BYTES, max);
    }

    public String limit() {
        return limit;
    }

    public long max() {
        return max;
    }
}
