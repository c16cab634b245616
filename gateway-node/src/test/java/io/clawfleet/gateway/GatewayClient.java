package io.clawfleet.gateway;

import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/** A test's HTTP client of one gateway: a JSON call with a bearer key, the way every API test makes it. */
final class GatewayClient {

    private final String base;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    /** @param base {@code http://127.0.0.1:<port>} */
    GatewayClient(String base) {
        this.base = base;
    }

    /** {@code body} as JSON (none when null); {@code key} as the bearer token (none when null). */
    HttpResponse<String> call(String method, String path, String key, JsonObject body) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body.encode()));
        if (key != null) {
            request.header("authorization", "Bearer " + key);
        }
        if (body != null) {
            request.header("content-type", "application/json");
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** A GET whose answer is binary (an export archive). */
    HttpResponse<byte[]> bytes(String path, String key) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(60)).GET()
                .header("authorization", "Bearer " + key).build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    /** Asserts a 2xx answer; returns it. */
    static HttpResponse<String> ok(HttpResponse<String> response) {
        assertThat(response.statusCode()).as(response.body()).isBetween(200, 299);
        return response;
    }

    static JsonObject json(HttpResponse<String> response) {
        return new JsonObject(response.body());
    }
}
