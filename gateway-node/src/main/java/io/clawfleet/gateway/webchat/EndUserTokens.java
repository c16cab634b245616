package io.clawfleet.gateway.webchat;

import io.vertx.core.json.JsonObject;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * End-user session tokens of the web chat: JSON Web Tokens signed with HS256 by the web chat account's secret, so that
 * the tenant's own backend mints them with any JWT library. Claims: {@code sub} (the end user's id in the tenant's
 * system: 1 to 128 of letters, digits and {@code ._:@+=-}) and {@code exp} (seconds since the epoch) are required;
 * {@code name} (how the bot may call them) is optional; {@code aud}, when present, must be the account's publishable
 * key. Only {@code HS256} is accepted: a token that names another algorithm ({@code none} included) is refused.
 */
public final class EndUserTokens {

    /** Clock skew tolerated on {@code exp}. */
    static final long LEEWAY_SECONDS = 60;
    static final Pattern USER_ID = Pattern.compile("[A-Za-z0-9._:@+=-]{1,128}");
    private static final String HEADER = Base64.getUrlEncoder().withoutPadding()
            .encodeToString("{\"alg\":\"HS256\",\"typ\":\"JWT\"}".getBytes(StandardCharsets.UTF_8));
    private static final int MAX_TOKEN = 4_096;

    /** Who a valid token speaks for. */
    public record EndUser(String id, String name, long expiresAt) {
    }

    private EndUserTokens() {
    }

    /** A token for {@code userId}, valid until {@code expiresAt} (epoch seconds), signed with {@code secret}. */
    public static String mint(String secret, String userId, String name, long expiresAt) {
        JsonObject claims = new JsonObject().put("sub", userId).put("exp", expiresAt);
        if (name != null) {
            claims.put("name", name);
        }
        String signingInput = HEADER + "." + Base64.getUrlEncoder().withoutPadding()
                .encodeToString(claims.encode().getBytes(StandardCharsets.UTF_8));
        return signingInput + "." + Base64.getUrlEncoder().withoutPadding().encodeToString(hmac(secret, signingInput));
    }

    /**
     * The end user a token speaks for, if it is signed with {@code secret}, uses HS256, has not expired at
     * {@code nowSeconds} and, when it names an audience, names {@code publishableKey}; empty otherwise (the reason is not
     * told: a caller probing tokens learns nothing).
     */
    public static Optional<EndUser> verify(String secret, String publishableKey, String token, long nowSeconds) {
        if (token == null || token.length() > MAX_TOKEN) {
            return Optional.empty();
        }
        String[] parts = token.split("\\.", -1);
        if (parts.length != 3) {
            return Optional.empty();
        }
        byte[] signature;
        JsonObject header;
        JsonObject claims;
        try {
            signature = Base64.getUrlDecoder().decode(parts[2]);
            header = new JsonObject(new String(Base64.getUrlDecoder().decode(parts[0]), StandardCharsets.UTF_8));
            claims = new JsonObject(new String(Base64.getUrlDecoder().decode(parts[1]), StandardCharsets.UTF_8));
        } catch (RuntimeException malformed) {
            return Optional.empty();
        }
        if (!"HS256".equals(header.getValue("alg"))
                || !MessageDigest.isEqual(hmac(secret, parts[0] + "." + parts[1]), signature)) {
            return Optional.empty();
        }
        Object sub = claims.getValue("sub");
        Object exp = claims.getValue("exp");
        Object name = claims.getValue("name");
        Object aud = claims.getValue("aud");
        if (!(sub instanceof String id) || !USER_ID.matcher(id).matches() || !(exp instanceof Number expires)
                || expires.longValue() + LEEWAY_SECONDS < nowSeconds
                || (name != null && !(name instanceof String n && n.length() <= 128))
                || (aud != null && !publishableKey.equals(aud)
                    && !(aud instanceof io.vertx.core.json.JsonArray list && list.contains(publishableKey)))) {
            return Optional.empty();
        }
        return Optional.of(new EndUser(id, (String) name, expires.longValue()));
    }

    private static byte[] hmac(String secret, String input) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
            return mac.doFinal(input.getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JDK", e);
        }
    }
}
