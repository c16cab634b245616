package io.clawfleet.sandbox.web;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.vertx.core.Future;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * {@code web_search} through the Brave Search API (seed 000 §7). The key comes only from the sandbox
 * node's environment variable named by {@code sandbox.web.braveApiKeyEnv}, goes only to the configured
 * endpoint, and never into a result or a log.
 */
public final class BraveSearch {

    /** One search result. */
    public record Result(String title, String url, String description) {
    }

    /** The search could not be made; the message says why, without the key. */
    public static final class SearchFailure extends RuntimeException {
        public SearchFailure(String message) {
            super(message, null, false, false);
        }
    }

    public static final int MAX_QUERY = 400;

    private final HttpClient http;
    private final ClawfleetConfig.Web config;
    private final String key;

    /** @param environment the sandbox node's environment */
    public BraveSearch(HttpClient http, ClawfleetConfig.Web config, Map<String, String> environment) {
        this.http = Objects.requireNonNull(http);
        this.config = Objects.requireNonNull(config);
        String value = environment.get(config.braveApiKeyEnv());
        this.key = value == null || value.isBlank() ? null : value.strip();
    }

    public boolean configured() {
        return key != null;
    }

    public Future<List<Result>> search(String query) {
        if (key == null) {
            return Future.failedFuture(new SearchFailure("web_search is not set up: set " + config.braveApiKeyEnv()
                    + " (a Brave Search API key) in the sandbox nodes' environment"));
        }
        if (query == null || query.isBlank() || query.length() > MAX_QUERY) {
            return Future.failedFuture(new IllegalArgumentException("the query must be 1 to " + MAX_QUERY + " characters"));
        }
        String url = config.braveApiUrl() + "?q=" + URLEncoder.encode(query.strip(), StandardCharsets.UTF_8)
                + "&count=" + config.searchResults();
        RequestOptions options = new RequestOptions().setMethod(HttpMethod.GET).setAbsoluteURI(url)
                .setTimeout(config.timeoutMs())
                .putHeader("Accept", "application/json")
                .putHeader("X-Subscription-Token", key);
        // The body is asked for in the send's own callback, so that no hop to another context (a call from outside
        // Vert.x makes a context of its own) can come between the response and its handlers. A CI run once saw
        // this search wait out its whole timeout against a local server; this is the suspected cause, not a proven one.
        return http.request(options)
                .compose(request -> request.send().compose(response -> response.body().map(body -> {
                    int status = response.statusCode();
                    if (status == 401 || status == 403) {
                        throw new SearchFailure("the Brave Search API refused the key in " + config.braveApiKeyEnv() + " (HTTP " + status + ")");
                    }
                    if (status == 429) {
                        throw new SearchFailure("the Brave Search API is rate limiting this key; try again later");
                    }
                    if (status != 200) {
                        throw new SearchFailure("the Brave Search API answered HTTP " + status);
                    }
                    return results(body.toJsonObject());
                })))
                .timeout(config.timeoutMs(), TimeUnit.MILLISECONDS);
    }

    private List<Result> results(JsonObject body) {
        JsonArray items = body.getJsonObject("web", new JsonObject()).getJsonArray("results", new JsonArray());
        List<Result> out = new ArrayList<>();
        for (int i = 0; i < items.size() && out.size() < config.searchResults(); i++) {
            JsonObject item = items.getJsonObject(i);
            out.add(new Result(item.getString("title", ""), item.getString("url", ""),
                    item.getString("description", "").replaceAll("<[^>]+>", "")));
        }
        return out;
    }
}
