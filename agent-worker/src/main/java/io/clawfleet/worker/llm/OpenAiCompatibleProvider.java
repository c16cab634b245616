package io.clawfleet.worker.llm;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Any OpenAI-compatible Chat Completions endpoint (OpenAI, OpenRouter, DeepSeek, Groq, vLLM, Ollama,
 * LM Studio, ...) over the Vert.x HTTP client. Each attempt has a timeout; 429, 5xx and connection
 * failures are retried with exponential backoff and full jitter, honouring Retry-After.
 */
public final class OpenAiCompatibleProvider implements LlmProvider {

    private static final Logger LOG = LoggerFactory.getLogger(OpenAiCompatibleProvider.class);
    private static final long MAX_BACKOFF_MS = 30_000;

    private final Vertx vertx;
    private final Context context;
    private final HttpClient client;
    private final URI baseUri;
    private final String apiKey;
    private final String model;
    private final long timeoutMs;
    private final int maxRetries;
    private final long backoffMs;

    public OpenAiCompatibleProvider(Vertx vertx, String baseUrl, String apiKey, String model, long timeoutMs,
                                    int maxRetries, long backoffMs) {
        this.vertx = Objects.requireNonNull(vertx);
        this.context = vertx.getOrCreateContext();
        this.baseUri = URI.create(baseUrl.endsWith("/") ? baseUrl : baseUrl + "/");
        this.apiKey = apiKey;
        this.model = Objects.requireNonNull(model);
        this.timeoutMs = timeoutMs;
        this.maxRetries = maxRetries;
        this.backoffMs = backoffMs;
        boolean tls = "https".equalsIgnoreCase(baseUri.getScheme());
        HttpClientOptions options = new HttpClientOptions()
                .setSsl(tls)
                .setTrustAll(false)
                .setVerifyHost(tls)
                .setKeepAlive(true)
                .setTcpNoDelay(true)
                .setConnectTimeout((int) Math.min(timeoutMs, 10_000))
                .setIdleTimeout((int) Math.max(1, TimeUnit.MILLISECONDS.toSeconds(timeoutMs)))
                .setIdleTimeoutUnit(TimeUnit.SECONDS);
        // Model calls are slow; many run at once. The pool must not be the bottleneck.
        this.client = vertx.createHttpClient(options, new PoolOptions().setHttp1MaxSize(1024).setMaxWaitQueueSize(100_000));
    }

    @Override
    public String name() {
        return "openai-compatible(" + baseUri.getHost() + ")";
    }

    @Override
    public Future<LlmResponse> complete(LlmRequest request) {
        if (Vertx.currentContext() == null) {
            // Off an event loop the response could start before its handlers are set; hop on one.
            Promise<LlmResponse> result = Promise.promise();
            context.runOnContext(v -> complete(request).onComplete(result));
            return result.future();
        }
        Buffer body = Buffer.buffer(requestJson(request).encode());
        Promise<LlmResponse> result = Promise.promise();
        attempt(body, 0, result);
        return result.future();
    }

    private void attempt(Buffer body, int attempt, Promise<LlmResponse> result) {
        send(body).onComplete(outcome -> {
            if (outcome.succeeded()) {
                result.complete(outcome.result());
                return;
            }
            LlmException failure = outcome.cause() instanceof LlmException e ? e
                    : new LlmException("model request failed: " + outcome.cause().getMessage(), 0, true, -1, outcome.cause());
            if (!failure.retryable() || attempt >= maxRetries) {
                result.fail(failure);
                return;
            }
            long ceiling = Math.min(MAX_BACKOFF_MS, backoffMs << Math.min(attempt, 16));
            long delay = Math.max(failure.retryAfterMs(), ThreadLocalRandom.current().nextLong(ceiling / 2, ceiling + 1));
            LOG.warn("model request failed, retrying [provider: {}, attempt: {}, status: {}, delay_ms: {}]: {}",
                    name(), attempt + 1, failure.status(), delay, failure.getMessage());
            vertx.setTimer(Math.max(1, Math.min(delay, MAX_BACKOFF_MS)), id -> attempt(body, attempt + 1, result));
        });
    }

    private Future<LlmResponse> send(Buffer body) {
        RequestOptions options = new RequestOptions()
                .setMethod(HttpMethod.POST)
                .setAbsoluteURI(baseUri.resolve("chat/completions").toString())
                .putHeader("content-type", "application/json")
                .putHeader("accept", "application/json");
        if (apiKey != null && !apiKey.isBlank()) {
            options.putHeader("authorization", "Bearer " + apiKey);
        }
        Promise<HttpClientRequest> sent = Promise.promise();
        Future<LlmResponse> response = client.request(options)
                .onSuccess(sent::tryComplete)
                .compose(req -> req.send(body))
                .compose(resp -> resp.body().map(payload -> {
                    int status = resp.statusCode();
                    if (status == 200) {
                        return parse(payload);
                    }
                    boolean retryable = status == 429 || status == 408 || status >= 500;
                    long retryAfter = retryAfterMs(resp.getHeader("retry-after"));
                    throw new LlmException("model endpoint answered " + status + ": " + snippet(payload.toString()),
                            status, retryable, retryAfter, null);
                }));
        return response.timeout(timeoutMs, TimeUnit.MILLISECONDS).recover(failure -> {
            if (failure instanceof java.util.concurrent.TimeoutException) {
                sent.future().onSuccess(HttpClientRequest::reset);
                return Future.failedFuture(new LlmException("model request timed out after " + timeoutMs + " ms", 0, true, -1, failure));
            }
            return Future.failedFuture(failure);
        });
    }

    JsonObject requestJson(LlmRequest request) {
        JsonArray messages = new JsonArray();
        for (ChatMessage message : request.messages()) {
            JsonObject json = new JsonObject().put("role", message.role());
            if (message.content() != null || message.toolCalls().isEmpty()) {
                json.put("content", message.content() == null ? "" : message.content());
            } else {
                json.putNull("content");
            }
            if (!message.toolCalls().isEmpty()) {
                JsonArray calls = new JsonArray();
                for (ToolCallRequest call : message.toolCalls()) {
                    calls.add(new JsonObject().put("id", call.id()).put("type", "function")
                            .put("function", new JsonObject().put("name", call.name()).put("arguments", call.arguments())));
                }
                json.put("tool_calls", calls);
            }
            if (message.toolCallId() != null) {
                json.put("tool_call_id", message.toolCallId());
            }
            if (message.name() != null && "tool".equals(message.role())) {
                json.put("name", message.name());
            }
            messages.add(json);
        }
        JsonObject body = new JsonObject()
                .put("model", request.model() == null ? model : request.model())
                .put("messages", messages);
        if (!request.tools().isEmpty()) {
            JsonArray tools = new JsonArray();
            for (ToolDefinition tool : request.tools()) {
                tools.add(new JsonObject().put("type", "function").put("function", new JsonObject()
                        .put("name", tool.name()).put("description", tool.description()).put("parameters", tool.parameters())));
            }
            body.put("tools", tools);
        }
        return body;
    }

    static LlmResponse parse(Buffer payload) {
        JsonObject json;
        try {
            json = payload.toJsonObject();
        } catch (RuntimeException e) {
            throw new LlmException("model endpoint answered with invalid JSON: " + snippet(payload.toString()), 200, true, -1, e);
        }
        JsonArray choices = json.getJsonArray("choices");
        if (choices == null || choices.isEmpty()) {
            throw new LlmException("model endpoint answered without choices: " + snippet(json.encode()), 200, false, -1, null);
        }
        JsonObject choice = choices.getJsonObject(0);
        JsonObject message = choice.getJsonObject("message", new JsonObject());
        List<ToolCallRequest> calls = new ArrayList<>();
        JsonArray toolCalls = message.getJsonArray("tool_calls");
        if (toolCalls != null) {
            for (int i = 0; i < toolCalls.size(); i++) {
                JsonObject call = toolCalls.getJsonObject(i);
                JsonObject function = call.getJsonObject("function", new JsonObject());
                calls.add(new ToolCallRequest(call.getString("id", "call_" + i), function.getString("name"),
                        function.getString("arguments", "{}")));
            }
        }
        JsonObject usage = json.getJsonObject("usage", new JsonObject());
        return new LlmResponse(message.getString("content"), calls, choice.getString("finish_reason", "stop"),
                json.getString("model"), usage.getInteger("prompt_tokens", 0), usage.getInteger("completion_tokens", 0));
    }

    private static long retryAfterMs(String header) {
        if (header == null) {
            return -1;
        }
        try {
            return Math.min(MAX_BACKOFF_MS, Long.parseLong(header.trim()) * 1000);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static String snippet(String text) {
        return text.length() <= 300 ? text : text.substring(0, 300) + "...";
    }

    public Future<Void> close() {
        return client.close();
    }
}
