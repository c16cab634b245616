package io.clawfleet.gateway.export;

/** Why an export under way stopped short of its end (the client went away or stopped reading). */
public final class ExportException extends RuntimeException {

    public ExportException(String message) {
        super(message, null, false, false);
    }
}
