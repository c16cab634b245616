package io.clawfleet.shared.store;

import java.security.SecureRandom;
import java.util.Base64;

/**
 * Tenant API keys as Clawfleet makes them: {@code cf_<id>_<secret>}. The id (12 characters) and the
 * prefix {@code cf_<id>} are public and name the key in lists, logs and audit rows; the secret is 32
 * random bytes (256 bits), so the key is stored as a plain SHA-256 ({@link TenantStore#hashKey}) with
 * nothing to brute-force. The whole key is shown once, when it is made.
 */
public final class ApiKeys {

    private static final SecureRandom RANDOM = new SecureRandom();
    private static final String ID_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789";
    private static final int ID_LENGTH = 12;
    private static final int SECRET_BYTES = 32;

    /** A key just made: its public id and prefix, and the whole key (the only time it exists outside its holder). */
    public record Generated(String id, String prefix, String key) {

        @Override
        public String toString() {
            return "Generated[id=" + id + ", prefix=" + prefix + ", key=[redacted]]";
        }
    }

    private ApiKeys() {
    }

    public static Generated generate() {
        StringBuilder id = new StringBuilder(ID_LENGTH);
        for (int i = 0; i < ID_LENGTH; i++) {
            id.append(ID_ALPHABET.charAt(RANDOM.nextInt(ID_ALPHABET.length())));
        }
        byte[] secret = new byte[SECRET_BYTES];
        RANDOM.nextBytes(secret);
        String prefix = "cf_" + id;
        return new Generated(id.toString(), prefix, prefix + "_" + Base64.getUrlEncoder().withoutPadding().encodeToString(secret));
    }
}
