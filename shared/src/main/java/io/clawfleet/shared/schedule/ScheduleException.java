package io.clawfleet.shared.schedule;

/** A schedule that cannot be used; the message names the field and what is expected. */
public final class ScheduleException extends IllegalArgumentException {

    private final String field;

    public ScheduleException(String field, String problem) {
        super(field + " " + problem);
        this.field = field;
    }

    public String field() {
        return field;
    }
}
