package io.clawfleet.shared.store;

/** A change a task's state does not allow (resuming a task that is done). Nothing was changed. */
public final class TaskStateException extends IllegalStateException {

    public TaskStateException(String message) {
        super(message);
    }
}
