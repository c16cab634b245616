package io.clawfleet.worker.llm;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.net.SocketAddress;
import io.clawfleet.shared.security.EgressGuard;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.URI;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The HTTP side every model provider shares: a pooled client, a timeout per attempt, status codes
 * turned into {@link LlmException}s (429, 408, 5xx and connection failures retryable), retries with
 * exponential backoff and full jitter honouring Retry-After, and server-sent events. The provider's
 * key is cut out of every error text, since endpoints sometimes echo what they were sent.
 */
final class LlmTransport {

    /** Connections to one provider endpoint at most: the default of worker.maxConcurrentTurns. */
    static final int MAX_CONNECTIONS = 16_384;

    private static final Logger LOG = LoggerFactory.getLogger(LlmTransport.class);
    private static final long MAX_BACKOFF_MS = 30_000;
    private static final int MAX_EVENT_BYTES = 4 * 1024 * 1024;

    private final Vertx vertx;
    private final Context context;
    private final HttpClient client;
    private final String providerName;
    private final String secret;
    private final long timeoutMs;
    private final int maxRetries;
    private final long backoffMs;
    private final EgressGuard egress;

    /** @param secret the API key, removed from error texts; may be null */
    LlmTransport(Vertx vertx, URI baseUri, String providerName, String secret, long timeoutMs, int maxRetries,
                 long backoffMs) {
        this(vertx, baseUri, providerName, secret, timeoutMs, maxRetries, backoffMs, null);
    }

    /**
     * @param secret the API key, removed from error texts; may be null
     * @param egress where a tenant's endpoint may lead: each connection goes to an address it checked (so a name that
     *               resolves inwards later is refused then); null for the operator's endpoints, which are trusted
     */
    LlmTransport(Vertx vertx, URI baseUri, String providerName, String secret, long timeoutMs, int maxRetries,
                 long backoffMs, EgressGuard egress) {
        this.vertx = Objects.requireNonNull(vertx);
        this.egress = egress;
        this.context = vertx.getOrCreateContext();
        this.providerName = Objects.requireNonNull(providerName);
        this.secret = secret == null || secret.isBlank() ? null : secret;
        this.timeoutMs = timeoutMs;
        this.maxRetries = maxRetries;
        this.backoffMs = backoffMs;
        boolean tls = "https".equalsIgnoreCase(baseUri.getScheme());
        HttpClientOptions options = new HttpClientOptions()
                .setSsl(tls)
                .setTrustAll(false)
                .setVerifyHost(tls)
                .setForceSni(tls)
                .setKeepAlive(true)
                .setTcpNoDelay(true)
                .setConnectTimeout((int) Math.min(timeoutMs, 10_000))
                .setIdleTimeout((int) Math.max(1, TimeUnit.MILLISECONDS.toSeconds(timeoutMs)))
                .setIdleTimeoutUnit(TimeUnit.SECONDS);
        // Model calls are slow; many run at once. The pool must not be the bottleneck: HTTP/1.1 needs a
        // connection per call in flight, and a worker may have worker.maxConcurrentTurns (16,384) turns.
        this.client = vertx.createHttpClient(options, new PoolOptions().setHttp1MaxSize(MAX_CONNECTIONS)
                .setMaxWaitQueueSize(100_000));
    }

    /** Turns one provider's streamed events into its answer. */
    interface StreamAssembler {
        void accept(SseDecoder.Event event);

        LlmResponse finish();
    }

    /**
     * One model call as every provider makes it: the request body built (a failure to build it is an
     * error of the call, not a crash), posted with retries; streamed into {@code sink} when there is
     * one, and then retried only while nothing was streamed, so a caller never sees a text twice.
     */
    Future<LlmResponse> call(URI uri, Map<String, String> headers, Supplier<JsonObject> body,
                             java.util.function.Function<Buffer, LlmResponse> parse,
                             java.util.function.Function<StreamSink, StreamAssembler> assembler, StreamSink sink) {
        return callWith(uri, headers, () -> body.get().toBuffer(), parse, assembler, sink);
    }

    /** As {@link #call}, with the body's bytes built by the provider. */
    Future<LlmResponse> callWith(URI uri, Map<String, String> headers, Supplier<Buffer> body,
                                 java.util.function.Function<Buffer, LlmResponse> parse,
                                 java.util.function.Function<StreamSink, StreamAssembler> assembler, StreamSink sink) {
        Buffer payload;
        try {
            payload = body.get();
        } catch (RuntimeException e) {
            return Future.failedFuture(new LlmException("model request could not be built: " + e.getMessage(), 0, false, -1, e));
        }
        if (sink == null) {
            return withRetries(() -> post(uri, headers, payload).map(parse), () -> true);
        }
        TrackingSink tracked = new TrackingSink(sink);
        return withRetries(() -> {
            StreamAssembler stream = assembler.apply(tracked);
            return postStream(uri, headers, payload, stream::accept).map(v -> stream.finish());
        }, () -> !tracked.emitted());
    }

    /**
     * Runs {@code attempt} until it succeeds, fails for good, retries are spent or {@code mayRetry}
     * says no (a stream that already reached its sink).
     */
    <T> Future<T> withRetries(Supplier<Future<T>> attempt, BooleanSupplier mayRetry) {
        if (Vertx.currentContext() == null) {
            // Off an event loop the response could start before its handlers are set; hop on one.
            Promise<T> result = Promise.promise();
            context.runOnContext(v -> withRetries(attempt, mayRetry).onComplete(result));
            return result.future();
        }
        Promise<T> result = Promise.promise();
        attempt(attempt, mayRetry, 0, result);
        return result.future();
    }

    private <T> void attempt(Supplier<Future<T>> call, BooleanSupplier mayRetry, int attempt, Promise<T> result) {
        Future<T> outcome;
        try {
            outcome = call.get();
        } catch (RuntimeException e) {
            outcome = Future.failedFuture(e);
        }
        outcome.onComplete(done -> {
            if (done.succeeded()) {
                result.complete(done.result());
                return;
            }
            LlmException failure = redacted(done.cause());
            if (!failure.retryable() || attempt >= maxRetries || !mayRetry.getAsBoolean()) {
                result.fail(failure);
                return;
            }
            long ceiling = Math.min(MAX_BACKOFF_MS, backoffMs << Math.min(attempt, 16));
            long delay = Math.max(failure.retryAfterMs(), ThreadLocalRandom.current().nextLong(ceiling / 2, ceiling + 1));
            LOG.warn("model request failed, retrying [provider: {}, attempt: {}, status: {}, delay_ms: {}]: {}",
                    providerName, attempt + 1, failure.status(), delay, failure.getMessage());
            vertx.setTimer(Math.max(1, Math.min(delay, MAX_BACKOFF_MS)), id -> attempt(call, mayRetry, attempt + 1, result));
        });
    }

    /** One POST; the body of a 200 answer, else the status as an {@link LlmException}. */
    Future<Buffer> post(URI uri, Map<String, String> headers, Buffer body) {
        Promise<HttpClientRequest> sent = Promise.promise();
        Future<Buffer> response = options(uri, headers, "application/json").compose(client::request)
                .onSuccess(sent::tryComplete)
                .compose(req -> req.send(body))
                .compose(resp -> resp.body().map(payload -> {
                    if (resp.statusCode() != 200) {
                        throw statusError(resp, payload);
                    }
                    return payload;
                }));
        return bounded(response, sent.future());
    }

    /**
     * One POST answered with server-sent events, each handed to {@code onEvent} as it arrives. An
     * exception from {@code onEvent} fails the call and drops the connection.
     */
    Future<Void> postStream(URI uri, Map<String, String> headers, Buffer body, Consumer<SseDecoder.Event> onEvent) {
        Promise<HttpClientRequest> sent = Promise.promise();
        Promise<Void> done = Promise.promise();
        options(uri, headers, "text/event-stream").compose(client::request)
                .onSuccess(sent::tryComplete)
                .compose(req -> req.send(body))
                .onFailure(done::tryFail)
                .onSuccess(resp -> {
                    if (resp.statusCode() != 200) {
                        resp.body().onSuccess(payload -> done.tryFail(statusError(resp, payload))).onFailure(done::tryFail);
                        return;
                    }
                    SseDecoder decoder = new SseDecoder(MAX_EVENT_BYTES, event -> {
                        if (!done.future().isComplete()) {
                            onEvent.accept(event);
                        }
                    });
                    resp.exceptionHandler(done::tryFail);
                    resp.handler(chunk -> guarded(done, sent.future(), () -> decoder.feed(chunk)));
                    resp.endHandler(v -> guarded(done, sent.future(), () -> {
                        decoder.end();
                        done.tryComplete();
                    }));
                });
        // After a timeout, late events of this attempt must not reach the sink (a retry may be running).
        return bounded(done.future(), sent.future()).onFailure(done::tryFail);
    }

    private static void guarded(Promise<Void> done, Future<HttpClientRequest> sent, Runnable step) {
        if (done.future().isComplete()) {
            return;
        }
        try {
            step.run();
        } catch (RuntimeException e) {
            done.tryFail(e);
            sent.onSuccess(HttpClientRequest::reset);
        }
    }

    private Future<RequestOptions> options(URI uri, Map<String, String> headers, String accept) {
        RequestOptions options = new RequestOptions()
                .setMethod(HttpMethod.POST)
                .setAbsoluteURI(uri.toString())
                .putHeader("content-type", "application/json")
                .putHeader("accept", accept);
        headers.forEach(options::putHeader);
        if (egress == null) {
            return Future.succeededFuture(options);
        }
        String host = uri.getHost().startsWith("[") ? uri.getHost().substring(1, uri.getHost().length() - 1) : uri.getHost();
        int port = uri.getPort() != -1 ? uri.getPort() : "https".equalsIgnoreCase(uri.getScheme()) ? 443 : 80;
        // Connect to the address that was checked; the name only goes in Host and TLS (SNI, verification).
        return egress.address(host)
                .recover(refused -> Future.failedFuture(new LlmException("model endpoint refused before connecting: "
                        + refused.getMessage(), 0, false, -1, null)))
                .map(address -> options.setServer(SocketAddress.inetSocketAddress(port, address.getHostAddress())));
    }

    private <T> Future<T> bounded(Future<T> response, Future<HttpClientRequest> sent) {
        return response.timeout(timeoutMs, TimeUnit.MILLISECONDS).recover(failure -> {
            if (failure instanceof TimeoutException) {
                sent.onSuccess(HttpClientRequest::reset);
                return Future.failedFuture(new LlmException("model request timed out after " + timeoutMs + " ms", 0, true, -1, failure));
            }
            return Future.failedFuture(failure);
        });
    }

    private LlmException statusError(HttpClientResponse resp, Buffer payload) {
        int status = resp.statusCode();
        // 529 is Anthropic's "overloaded"; every 5xx is the server's trouble, not the request's.
        boolean retryable = status == 429 || status == 408 || status >= 500;
        return new LlmException("model endpoint answered " + status + ": " + snippet(redact(payload.toString())),
                status, retryable, retryAfterMs(resp), null);
    }

    private static long retryAfterMs(HttpClientResponse resp) {
        try {
            String ms = resp.getHeader("retry-after-ms");
            if (ms != null) {
                return Math.min(MAX_BACKOFF_MS, (long) Double.parseDouble(ms.trim()));
            }
            String seconds = resp.getHeader("retry-after");
            return seconds == null ? -1 : Math.min(MAX_BACKOFF_MS, (long) (Double.parseDouble(seconds.trim()) * 1000));
        } catch (NumberFormatException e) {
            return -1; // an HTTP date: rare from model APIs; our own backoff applies
        }
    }

    private LlmException redacted(Throwable cause) {
        if (cause instanceof LlmException e) {
            String message = redact(e.getMessage());
            return message == null || message.equals(e.getMessage()) ? e
                    : new LlmException(message, e.status(), e.retryable(), e.retryAfterMs(), e.getCause());
        }
        return new LlmException("model request failed: " + redact(String.valueOf(cause.getMessage())), 0, true, -1, cause);
    }

    /** The text with the provider's key cut out. */
    String redact(String text) {
        return secret == null || text == null ? text : text.replace(secret, "[redacted]");
    }

    static String snippet(String text) {
        return text.length() <= 300 ? text : text.substring(0, 300) + "...";
    }

    Future<Void> close() {
        return client.close();
    }
}
