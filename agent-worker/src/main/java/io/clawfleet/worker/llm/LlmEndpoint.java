package io.clawfleet.worker.llm;

import java.net.URI;
import java.util.Objects;

/**
 * Where and how to reach one model API. {@link #toString()} leaves the key out, so an endpoint can
 * be logged.
 *
 * @param name           the provider's name in logs, metrics and errors
 * @param baseUrl        e.g. {@code https://api.openai.com/v1} or {@code https://api.anthropic.com}
 * @param apiKey         null when the endpoint needs none
 * @param timeoutMs      one attempt, end to end
 * @param maxRetries     retries after the first attempt, on 408, 429, 5xx and connection failures
 * @param retryBackoffMs first backoff; doubles per retry, with full jitter
 * @param maxTokens      longest answer in tokens, for APIs that require it (Anthropic)
 */
public record LlmEndpoint(String name, String baseUrl, String apiKey, String model, long timeoutMs, int maxRetries,
                          long retryBackoffMs, int maxTokens) {

    public LlmEndpoint {
        Objects.requireNonNull(name);
        Objects.requireNonNull(baseUrl);
        Objects.requireNonNull(model);
    }

    /** The base URL with a trailing slash, so relative paths resolve under it. */
    URI baseUri() {
        return URI.create(baseUrl.endsWith("/") ? baseUrl : baseUrl + "/");
    }

    @Override
    public String toString() {
        return "LlmEndpoint[name=" + name + ", baseUrl=" + baseUrl + ", model=" + model + ", timeoutMs=" + timeoutMs
                + ", maxRetries=" + maxRetries + ", retryBackoffMs=" + retryBackoffMs + ", maxTokens=" + maxTokens
                + ", apiKey=" + (apiKey == null ? "none" : "[redacted]") + "]";
    }
}
