package io.clawfleet.gateway.whatsapp;

import io.clawfleet.gateway.delivery.DeliveryException;
import io.clawfleet.gateway.delivery.PlatformHttp;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Objects;
import java.util.Set;

/**
 * The WhatsApp Cloud API calls Clawfleet makes (Meta's Graph API): a phone number's details, and messages sent from
 * it. The access token goes in the {@code Authorization} header, never in an error message. Graph errors come as
 * {@code {"error": {"message", "code", "error_subcode"}}} with an HTTP status; failures are
 * {@link DeliveryException}s that say whether a retry may help.
 */
public final class WhatsAppApi {

    /** The Graph API, at the version these calls were written against, unless an account names another base. */
    public static final String DEFAULT_API_URL = "https://graph.facebook.com/v21.0";
    /** Longest text of one WhatsApp text message. */
    public static final int MAX_TEXT = 4096;
    /**
     * Graph error codes a later try may get past: API too busy or unknown errors (1, 2), call rate limits (4, 80007),
     * the number's throughput (130429), the pair rate limit to one user (131056), a temporary service error (131000).
     * Any other, such as 131047 (more than 24 hours since the user last wrote: only a template may go out) or 190 (the
     * token expired), will not change by waiting.
     */
    private static final Set<Integer> TRANSIENT = Set.of(1, 2, 4, 80007, 130429, 131000, 131056);

    private final PlatformHttp http;

    public WhatsAppApi(PlatformHttp http) {
        this.http = Objects.requireNonNull(http);
    }

    /** The phone number's {@code display_phone_number} and {@code verified_name}: also a check of the token. */
    public Future<JsonObject> phoneNumber(String apiUrl, String token, String phoneNumberId) {
        return call(HttpMethod.GET, apiUrl, token, phoneNumberId + "?fields=display_phone_number,verified_name", null, "phone number",
                15_000);
    }

    /** Sends a text message to a user ({@code to}: the user's WhatsApp id), without a link preview. */
    public Future<Void> sendText(String apiUrl, String token, String phoneNumberId, String to, String text) {
        JsonObject body = new JsonObject().put("messaging_product", "whatsapp").put("recipient_type", "individual").put("to", to)
                .put("type", "text").put("text", new JsonObject().put("preview_url", false).put("body", text));
        return call(HttpMethod.POST, apiUrl, token, phoneNumberId + "/messages", body, "messages", 30_000).mapEmpty();
    }

    /**
     * Marks a user's message read and shows "typing…" to them (until the reply, or 25 seconds), as WhatsApp does for
     * a person answering.
     */
    public Future<Void> readAndTyping(String apiUrl, String token, String phoneNumberId, String messageId) {
        JsonObject body = new JsonObject().put("messaging_product", "whatsapp").put("status", "read").put("message_id", messageId)
                .put("typing_indicator", new JsonObject().put("type", "text"));
        return call(HttpMethod.POST, apiUrl, token, phoneNumberId + "/messages", body, "typing", 10_000).mapEmpty();
    }

    private Future<JsonObject> call(HttpMethod method, String apiUrl, String token, String path, JsonObject body, String what,
                                    long timeoutMs) {
        URI uri;
        try {
            uri = new URI(apiUrl + "/" + path);
        } catch (URISyntaxException e) {
            return Future.failedFuture(new DeliveryException("WhatsApp " + what + " failed: the API URL is not a valid URL", false, -1));
        }
        MultiMap headers = MultiMap.caseInsensitiveMultiMap().add("authorization", "Bearer " + token);
        if (body != null) {
            headers.add("content-type", "application/json");
        }
        return http.request(method, "WhatsApp " + what, uri, headers, body == null ? null : Buffer.buffer(body.encode()), timeoutMs)
                .map(reply -> {
                    JsonObject json;
                    try {
                        json = reply.body().toJsonObject();
                    } catch (RuntimeException e) {
                        json = null;
                    }
                    if (reply.status() >= 200 && reply.status() < 300 && json != null) {
                        return json;
                    }
                    JsonObject error = json == null ? new JsonObject() : json.getJsonObject("error", new JsonObject());
                    int code = error.getInteger("code", -1);
                    boolean retryable = reply.status() == 429 || reply.status() >= 500 || TRANSIENT.contains(code);
                    throw new DeliveryException("WhatsApp " + what + " failed: " + reply.status() + " (code " + code + ") "
                            + error.getString("message", "no message"), retryable, -1);
                });
    }
}
