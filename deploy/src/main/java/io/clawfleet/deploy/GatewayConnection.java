package io.clawfleet.deploy;

import picocli.CommandLine.Option;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/** Where the gateway is and which key to use: the options and HTTP calls every client command shares. */
final class GatewayConnection {

    @Option(names = "--url", defaultValue = "http://127.0.0.1:8080", description = "Gateway URL (default ${DEFAULT-VALUE}).")
    String url;

    @Option(names = "--api-key", description = "Tenant API key (default: env CLAWFLEET_API_KEY, else .clawfleet/api-key).")
    String apiKey;

    /**
     * The client commands' one HTTP client, made on first use: picocli makes this class's options for every command
     * at each launch, {@code node} and {@code up} included, and a client made with them costs each launch its TLS set-up
     * and a selector thread (clawfleet --help took 1.27 s instead of 0.59 s, docs/PERFORMANCE.md).
     */
    private static final class Client {
        static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    static HttpClient http() {
        return Client.HTTP;
    }

    HttpResponse<String> send(String method, String path) throws IOException, InterruptedException {
        return send(method, path, null);
    }

    /** Sends {@code json} as the body (none when null); waits at most 30 s for the answer. */
    HttpResponse<String> send(String method, String path, String json) throws IOException, InterruptedException {
        return send(method, path, json, "clawfleet-cli");
    }

    /**
     * As {@link #send(String, String, String)}, saying in {@code x-clawfleet-client} which command sends it
     * ({@code clawfleet-cli admin grant}): the gateway's audit trail records it beside the key that acted.
     */
    HttpResponse<String> send(String method, String path, String json, String client) throws IOException, InterruptedException {
        return send(http(), url, key(), method, path, json, client);
    }

    /**
     * A GET whose body goes to {@code file} as it arrives, however large; waits at most 60 s for the
     * answer to start, then as long as the body takes. An answer other than 200 leaves its body in the file.
     */
    HttpResponse<Path> download(String path, Path file, String client) throws IOException, InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create(url.replaceAll("/$", "") + path))
                .header("authorization", "Bearer " + key()).header("x-clawfleet-client", client)
                .timeout(Duration.ofSeconds(60)).GET().build();
        return http().send(request, HttpResponse.BodyHandlers.ofFile(file));
    }

    private String key() throws IOException {
        String key = apiKey != null ? apiKey : System.getenv("CLAWFLEET_API_KEY");
        Path file = Path.of(".clawfleet", UpCommand.API_KEY_FILE);
        if (key == null && Files.isReadable(file)) {
            key = Files.readString(file).strip();
        }
        if (key == null) {
            throw new IOException("no API key: pass --api-key or set CLAWFLEET_API_KEY");
        }
        return key;
    }

    /** One JSON call to a gateway with {@code key} as the bearer token; waits at most 30 s for the answer. */
    static HttpResponse<String> send(HttpClient http, String url, String key, String method, String path, String json,
                                     String client) throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url.replaceAll("/$", "") + path))
                .header("authorization", "Bearer " + key).header("x-clawfleet-client", client)
                .timeout(Duration.ofSeconds(30));
        if (json == null) {
            request.method(method, HttpRequest.BodyPublishers.noBody());
        } else {
            request.header("content-type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(json));
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }
}
