package io.clawfleet.shared.store;

/** A task refused because its tenant has the most tasks it may have. Nothing was changed. */
public final class TaskLimitException extends IllegalArgumentException {

    public TaskLimitException(String message) {
        super(message);
    }
}
