package io.clawfleet.shared.security;

/** A secret that cannot be sealed or opened: no master key, a master key that is not configured, a wrong key. */
public final class SecretException extends RuntimeException {

    public SecretException(String message) {
        super(message);
    }
}
