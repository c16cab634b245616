package io.clawfleet.shared.store;

/** A workspace write refused because it would pass a limit (file size, number of files). Nothing was changed. */
public final class WorkspaceLimitException extends IllegalArgumentException {

    public WorkspaceLimitException(String message) {
        super(message);
    }
}
