package io.clawfleet.shared.store;

/** A task refused because its tenant, or its chat, has the most tasks it may have. Nothing was changed. */
public final class TaskLimitException extends IllegalArgumentException {

    /** Whose limit was reached. */
    public enum Scope {
        TENANT("task_limit"), CHAT("chat_task_limit");

        private final String code;

        Scope(String code) {
            this.code = code;
        }

        /** The error code an HTTP answer carries. */
        public String code() {
            return code;
        }
    }

    private final Scope scope;

    public TaskLimitException(String message) {
        this(Scope.TENANT, message);
    }

    public TaskLimitException(Scope scope, String message) {
        super(message);
        this.scope = java.util.Objects.requireNonNull(scope);
    }

    public Scope scope() {
        return scope;
    }
}
