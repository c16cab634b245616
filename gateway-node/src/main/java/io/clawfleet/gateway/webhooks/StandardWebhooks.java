package io.clawfleet.gateway.webhooks;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.Base64;

/**
 * Signatures per the Standard Webhooks spec (standardwebhooks.com): a secret is {@code whsec_} and the base64 of random
 * bytes; a message is signed as {@code v1,} and the base64 HMAC-SHA256, under the decoded secret, of
 * {@code <webhook-id>.<webhook-timestamp>.<body>}, sent in {@code webhook-signature} beside {@code webhook-id} and
 * {@code webhook-timestamp} (Unix seconds).
 */
public final class StandardWebhooks {

    public static final String PREFIX = "whsec_";
    private static final SecureRandom RANDOM = new SecureRandom();

    private StandardWebhooks() {
    }

    /** A new secret: 32 random bytes. */
    public static String newSecret() {
        byte[] bytes = new byte[32];
        RANDOM.nextBytes(bytes);
        return PREFIX + Base64.getEncoder().encodeToString(bytes);
    }

    /** The {@code webhook-signature} of a message. */
    public static String sign(String secret, String id, long timestamp, String body) {
        byte[] key = Base64.getDecoder().decode(secret.startsWith(PREFIX) ? secret.substring(PREFIX.length()) : secret);
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            byte[] digest = mac.doFinal((id + "." + timestamp + "." + body).getBytes(StandardCharsets.UTF_8));
            return "v1," + Base64.getEncoder().encodeToString(digest);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
        }
    }
}
