package io.clawfleet.gateway.webchat;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

import static org.assertj.core.api.Assertions.assertThat;

/** End-user tokens as a tenant's backend would make them with any JWT library (here by hand, per RFC 7519). */
class EndUserTokensTest {

    private static final String SECRET = "wcs_secret";
    private static final String KEY = "pk_7_abcdefghijklmnopqrstuv";
    private static final long NOW = 1_800_000_000L;

    private static String jwt(String secret, JsonObject header, JsonObject claims) throws Exception {
        Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
        String input = b64.encodeToString(header.encode().getBytes(StandardCharsets.UTF_8)) + "."
                + b64.encodeToString(claims.encode().getBytes(StandardCharsets.UTF_8));
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
        return input + "." + b64.encodeToString(mac.doFinal(input.getBytes(StandardCharsets.UTF_8)));
    }

    private static JsonObject hs256() {
        return new JsonObject().put("alg", "HS256").put("typ", "JWT");
    }

    @Test
    void aTokenFromAnyJwtLibraryIsReadWithItsClaims() throws Exception {
        String token = jwt(SECRET, hs256(), new JsonObject().put("sub", "user-1").put("exp", NOW + 60).put("name", "Ada")
                .put("aud", KEY).put("iat", NOW));
        var user = EndUserTokens.verify(SECRET, KEY, token, NOW).orElseThrow();
        assertThat(user.id()).isEqualTo("user-1");
        assertThat(user.name()).isEqualTo("Ada");
        assertThat(EndUserTokens.verify(SECRET, KEY, jwt(SECRET, hs256(), new JsonObject().put("sub", "u").put("exp", NOW + 60)
                .put("aud", new JsonArray().add("other").add(KEY))), NOW)).isPresent();
        assertThat(EndUserTokens.verify(SECRET, KEY, EndUserTokens.mint(SECRET, "u", null, NOW + 5), NOW)).isPresent();
    }

    @Test
    void anythingElseIsRefused() throws Exception {
        JsonObject claims = new JsonObject().put("sub", "user-1").put("exp", NOW + 60);
        assertThat(EndUserTokens.verify(SECRET, KEY, jwt("other", hs256(), claims), NOW)).isEmpty();
        assertThat(EndUserTokens.verify(SECRET, KEY, jwt(SECRET, hs256().put("alg", "HS512"), claims), NOW)).isEmpty();
        assertThat(EndUserTokens.verify(SECRET, KEY, jwt(SECRET, hs256(), claims.copy().put("aud", "pk_8_x")), NOW)).isEmpty();
        assertThat(EndUserTokens.verify(SECRET, KEY, jwt(SECRET, hs256(), claims.copy().put("exp", NOW - 61)), NOW)).isEmpty();
        assertThat(EndUserTokens.verify(SECRET, KEY, jwt(SECRET, hs256(), claims.copy().put("exp", NOW - 59)), NOW))
                .as("within the clock skew allowed").isPresent();
        JsonObject noExp = new JsonObject().put("sub", "user-1");
        assertThat(EndUserTokens.verify(SECRET, KEY, jwt(SECRET, hs256(), noExp), NOW)).isEmpty();
        assertThat(EndUserTokens.verify(SECRET, KEY, jwt(SECRET, hs256(), claims.copy().put("sub", "a b")), NOW)).isEmpty();
        assertThat(EndUserTokens.verify(SECRET, KEY, jwt(SECRET, hs256(), claims.copy().put("sub", 42)), NOW)).isEmpty();
        String good = jwt(SECRET, hs256(), claims);
        String[] parts = good.split("\\.");
        String tampered = parts[0] + "." + Base64.getUrlEncoder().withoutPadding().encodeToString(
                claims.copy().put("sub", "admin").encode().getBytes(StandardCharsets.UTF_8)) + "." + parts[2];
        assertThat(EndUserTokens.verify(SECRET, KEY, tampered, NOW)).isEmpty();
        assertThat(EndUserTokens.verify(SECRET, KEY, good + ".x", NOW)).isEmpty();
        assertThat(EndUserTokens.verify(SECRET, KEY, "%%%.%%%.%%%", NOW)).isEmpty();
        assertThat(EndUserTokens.verify(SECRET, KEY, null, NOW)).isEmpty();
    }
}
