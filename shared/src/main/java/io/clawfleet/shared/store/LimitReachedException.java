package io.clawfleet.shared.store;

/** A tenant has as many of something as its limit allows ({@link TenantLimits}); nothing was stored. */
public final class LimitReachedException extends IllegalArgumentException {

    private final String limit;
    private final int max;

    public LimitReachedException(String limit, int max, String what) {
        super("this tenant may have at most " + max + " " + what + " (its limit '" + limit + "'); remove some, or ask the "
                + "operator to raise the limit");
        this.limit = limit;
        this.max = max;
    }

    public String limit() {
        return limit;
    }

    public int max() {
        return max;
    }
}
