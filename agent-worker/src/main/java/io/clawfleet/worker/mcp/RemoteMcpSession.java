package io.clawfleet.worker.mcp;

import io.clawfleet.shared.security.EgressGuard;
import io.clawfleet.worker.llm.LlmException;
import io.clawfleet.worker.llm.SseDecoder;
import io.clawfleet.worker.mcp.McpCallException.Kind;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientRequest;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.json.DecodeException;
import io.vertx.core.json.Json;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.core.net.SocketAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.URI;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * A client session with one remote MCP server over Streamable HTTP (revision 2025-11-25): initialize once, then
 * JSON-RPC requests, each one POST answered with JSON or an event stream in which the server's notifications and
 * requests (ping) may come before the response; an expired session renewed once; and, when asked, the GET stream of
 * server-initiated messages. Every connection goes to an address the egress guard checked. The caller's header values
 * are credentials: they are cut out of every message and never logged.
 *
 * <p>Methods may be called from any thread: the work runs on the Vert.x context taken at construction, so the state
 * has one thread and response handlers are set before data arrives; {@code onNotification} runs there too.
 */
public final class RemoteMcpSession {

    /** Protocol revisions this client speaks, preferred first. */
    public static final List<String> VERSIONS = List.of("2025-11-25", "2025-06-18", "2025-03-26");

    private static final Logger LOG = LoggerFactory.getLogger(RemoteMcpSession.class);
    private static final String ACCEPT_BOTH = "application/json, text/event-stream";
    private static final long FIRST_BACKOFF_MS = 1_000;
    private static final long MAX_BACKOFF_MS = 60_000;
    /** How much of an error body is kept: enough to quote its start; the rest is read and dropped. */
    private static final int ERROR_BODY_BYTES = 4_096;
    private static final int SNIPPET_CHARS = 200;
    private static final int SERVER_MESSAGE_CHARS = 1_000;
    /** How long a stream may go on after its answer before it is reset: servers end it, and its connection is reused. */
    private static final long DRAIN_MS = 1_000;

    private final Vertx vertx;
    private final Context context;
    private final HttpClient client;
    private final EgressGuard egress;
    private final URI url;
    private final Map<String, String> headers;
    private final List<String> secrets;
    private final long timeoutMs;
    private final int maxResponseBytes;
    private final BiConsumer<String, JsonObject> onNotification;
    /** The URL as it may be logged: no user info, no query. */
    private final String display;
    /** Why the URL cannot be used, or null. */
    private final String badUrl;
    private final String host;
    private final int port;

    // The state below is only touched on `context`.
    private long lastRequestId;
    private Future<JsonObject> initialized;
    private String sessionId;
    private String protocolVersion;
    private boolean closed;
    private Future<Void> closing;
    private boolean listening;
    private HttpClientRequest stream;
    private String lastEventId;
    private long backoffMs = FIRST_BACKOFF_MS;
    private long reconnectTimer = -1;

    /**
     * @param client           a shared Vert.x HttpClient (created by the caller; keep-alive pool)
     * @param egress           the SSRF guard every connection goes through (resolve + check, connect to the checked address)
     * @param url              the server's MCP endpoint, http or https
     * @param headers          extra headers sent on every request (credentials); their values never appear in a message
     * @param timeoutMs        the limit of one request/response exchange (initialize and each call); the request is reset then
     * @param maxResponseBytes the largest JSON body or single event accepted; more fails the call (TOO_LARGE)
     * @param onNotification   called on the event loop with the method and params of every server notification seen
     */
    public RemoteMcpSession(Vertx vertx, HttpClient client, EgressGuard egress, URI url, Map<String, String> headers,
                            long timeoutMs, int maxResponseBytes, BiConsumer<String, JsonObject> onNotification) {
        this.vertx = Objects.requireNonNull(vertx);
        this.context = vertx.getOrCreateContext();
        this.client = Objects.requireNonNull(client);
        this.egress = Objects.requireNonNull(egress);
        this.url = Objects.requireNonNull(url);
        this.headers = Map.copyOf(headers);
        this.secrets = secrets(this.headers);
        this.timeoutMs = timeoutMs;
        this.maxResponseBytes = maxResponseBytes;
        this.onNotification = Objects.requireNonNull(onNotification);
        String scheme = url.getScheme() == null ? "" : url.getScheme().toLowerCase(Locale.ROOT);
        String name = url.getHost();
        this.badUrl = !scheme.equals("http") && !scheme.equals("https") ? "the MCP server URL is not an http or https URL"
                : name == null || name.isEmpty() ? "the MCP server URL has no host" : null;
        this.host = name == null ? "" : name.startsWith("[") ? name.substring(1, name.length() - 1) : name;
        this.port = url.getPort() != -1 ? url.getPort() : scheme.equals("https") ? 443 : 80;
        this.display = badUrl != null ? "(an invalid URL)" : scheme + "://" + name
                + (url.getPort() == -1 ? "" : ":" + url.getPort()) + (url.getRawPath() == null ? "" : url.getRawPath());
    }

    /** Sends one JSON-RPC request and completes with its result, initializing the session first if needed (once). */
    public Future<JsonObject> request(String method, JsonObject params) {
        Objects.requireNonNull(method);
        return onContext(() -> call(method, params));
    }

    /** Every item of a paginated list method ({@code tools/list} → "tools"...), following nextCursor, at most maxPages pages. */
    public Future<List<JsonObject>> listAll(String method, String field, int maxPages) {
        return onContext(() -> page(method, field, null, Math.max(1, maxPages), new ArrayList<>()));
    }

    /** The server's capabilities from its initialize result (initializing first if needed). */
    public Future<JsonObject> capabilities() {
        return onContext(() -> live().compose(v -> initialized()).map(init ->
                init.getValue("capabilities") instanceof JsonObject caps ? caps : new JsonObject()));
    }

    /**
     * Opens the GET stream of server-initiated messages and keeps it open until {@link #close()}, reconnecting with
     * backoff (1 s doubling to 60 s, resuming after the last event id); a 405 means the server offers none. Idempotent.
     */
    public void listen() {
        onContext(() -> {
            if (!closed && !listening) {
                listening = true;
                connect();
            }
            return Future.succeededFuture();
        });
    }

    /** Stops listening and ends the session on the server (DELETE, best effort); calls in flight go on. Idempotent. */
    public Future<Void> close() {
        return onContext(() -> {
            if (closing != null) {
                return closing;
            }
            closed = true;
            listening = false;
            if (reconnectTimer != -1) {
                vertx.cancelTimer(reconnectTimer);
                reconnectTimer = -1;
            }
            HttpClientRequest open = stream;
            stream = null;
            if (open != null) {
                open.reset();
            }
            closing = sessionId == null ? Future.succeededFuture() : endSession(sessionId, protocolVersion);
            return closing;
        });
    }

    private <T> Future<T> onContext(Supplier<Future<T>> action) {
        if (Vertx.currentContext() == context) {
            return guarded(action);
        }
        // HTTP callbacks run on the context that sent the request: state stays on one thread, handlers are set in time.
        Promise<T> result = Promise.promise();
        context.runOnContext(v -> guarded(action).onComplete(result));
        return result.future();
    }

    private static <T> Future<T> guarded(Supplier<Future<T>> action) {
        try {
            return action.get();
        } catch (RuntimeException e) {
            return Future.failedFuture(e);
        }
    }

    private Future<Void> live() {
        return closed ? Future.failedFuture(failure(Kind.REFUSED, 0, "the session with the MCP server at " + display
                + " is closed")) : Future.succeededFuture();
    }

    private Future<JsonObject> call(String method, JsonObject params) {
        return live().compose(v -> initialized()).compose(init -> attempt(method, params, true));
    }

    private Future<JsonObject> attempt(String method, JsonObject params, boolean mayRenew) {
        String session = sessionId;
        return new Exchange(method, session, protocolVersion).run(params).map(Reply::result).recover(failure -> {
            if (!(failure instanceof SessionLost lost)) {
                return Future.failedFuture(failure);
            }
            if (!mayRenew || closed) {
                return Future.failedFuture(lost(lost.status, method));
            }
            // The server forgot the session (restarted, expired): the request was not handled; a new session may take it.
            LOG.info("mcp session expired, starting a new one [server: {}, method: {}]", display, method);
            forget(session);
            return initialized().compose(init -> attempt(method, params, false));
        });
    }

    private Future<List<JsonObject>> page(String method, String field, String cursor, int pagesLeft, List<JsonObject> items) {
        JsonObject params = cursor == null ? new JsonObject() : new JsonObject().put("cursor", cursor);
        return call(method, params).compose(result -> {
            if (!(result.getValue(field) instanceof JsonArray list)) {
                return Future.failedFuture(failure(Kind.PROTOCOL, 0, "the MCP server at " + display + " answered " + method
                        + " without its " + field));
            }
            for (Object item : list) {
                if (!(item instanceof JsonObject object)) {
                    return Future.failedFuture(failure(Kind.PROTOCOL, 0, "the MCP server at " + display + " listed a " + field
                            + " entry that is not an object"));
                }
                items.add(object);
            }
            Object next = result.getValue("nextCursor");
            return next instanceof String more && !more.isEmpty() && pagesLeft > 1
                    ? page(method, field, more, pagesLeft - 1, items) : Future.succeededFuture(items);
        });
    }

    /** The initialize result; concurrent first calls share one initialize, and a failed one is tried again by the next. */
    private Future<JsonObject> initialized() {
        if (initialized == null) {
            Future<JsonObject> attempt = initialize();
            initialized = attempt;
            attempt.onFailure(e -> {
                if (initialized == attempt) {
                    initialized = null;
                }
            });
            return attempt; // not the field: a failure at once has cleared it already
        }
        return initialized;
    }

    private Future<JsonObject> initialize() {
        JsonObject params = new JsonObject().put("protocolVersion", VERSIONS.get(0)).put("capabilities", new JsonObject())
                .put("clientInfo", new JsonObject().put("name", "clawfleet").put("version", "1"));
        return new Exchange("initialize", null, null).run(params).compose(reply -> {
            Object version = reply.result().getValue("protocolVersion");
            if (!(version instanceof String agreed) || !VERSIONS.contains(agreed)) {
                return Future.failedFuture(failure(Kind.PROTOCOL, 0, "the MCP server at " + display + " wants protocol version "
                        + version + "; this client speaks " + String.join(", ", VERSIONS)));
            }
            return initializedNotification(reply.session(), agreed).map(v -> {
                sessionId = reply.session();
                protocolVersion = agreed;
                lastEventId = null;
                return reply.result();
            });
        });
    }

    private Future<Void> initializedNotification(String session, String version) {
        String method = "notifications/initialized";
        Buffer body = new JsonObject().put("jsonrpc", "2.0").put("method", method).toBuffer();
        Promise<HttpClientRequest> sent = Promise.promise();
        Future<Void> done = send(HttpMethod.POST, body, session, version, null, sent).compose(resp -> {
            int status = resp.statusCode();
            if (status == 202 || status == 200 || status == 204) {
                discard(resp, sent.future());
                return Future.succeededFuture();
            }
            return read(resp, ERROR_BODY_BYTES, false, sent.future()).compose(text -> Future.failedFuture(
                    sessionLost(status, session, text) ? lost(status, method) : statusError(status, resp, text, method)));
        });
        return bounded(done, sent.future(), method);
    }

    private void forget(String session) {
        if (session != null && session.equals(sessionId)) {
            sessionId = null;
            initialized = null;
            lastEventId = null;
        }
    }

    private Future<Void> endSession(String session, String version) {
        Promise<HttpClientRequest> sent = Promise.promise();
        Future<Void> done = send(HttpMethod.DELETE, null, session, version, null, sent)
                .map(resp -> {
                    discard(resp, sent.future());
                    return null;
                });
        return bounded(done, sent.future(), "the session's end").recover(e -> {
            LOG.debug("mcp session end failed [server: {}]: {}", display, e.getMessage());
            return Future.succeededFuture();
        });
    }

    // --- the notification stream (GET) -------------------------------------------------------------------------

    private void connect() {
        reconnectTimer = -1;
        if (!listening) {
            return;
        }
        Promise<HttpClientRequest> sent = Promise.promise();
        initialized().compose(init -> {
            String session = sessionId;
            String version = protocolVersion;
            Future<HttpClientResponse> opened = send(HttpMethod.GET, null, session, version, lastEventId, sent);
            return bounded(opened, sent.future(), "the notification stream")
                    .onSuccess(resp -> opened(resp, sent.future().result(), session, version));
        }).onFailure(e -> retryLater(e.getMessage()));
    }

    private void opened(HttpClientResponse resp, HttpClientRequest request, String session, String version) {
        int status = resp.statusCode();
        if (!listening) {
            request.reset();
            return;
        }
        if (status == 405) {
            discard(resp, Future.succeededFuture(request));
            listening = false;
            LOG.debug("mcp server offers no notification stream [server: {}]", display);
            return;
        }
        if (status != 200 || !"text/event-stream".equals(contentType(resp))) {
            read(resp, ERROR_BODY_BYTES, false, Future.succeededFuture(request)).onComplete(body -> {
                if (body.succeeded() && sessionLost(status, session, body.result())) {
                    forget(session); // the next attempt starts a new session
                }
                retryLater("answered HTTP " + status + " (" + contentType(resp) + ")");
            });
            return;
        }
        stream = request;
        SseDecoder decoder = new SseDecoder(maxResponseBytes, event -> {
            backoffMs = FIRST_BACKOFF_MS;
            if (event.id() != null) {
                lastEventId = event.id();
            }
            if (!event.data().isBlank()) {
                try {
                    forEachMessage(event.data(), message -> serverMessage(message, session, version));
                } catch (McpCallException e) {
                    LOG.debug("mcp notification stream sent a bad event [server: {}]: {}", display, e.getMessage());
                }
            }
        });
        resp.handler(chunk -> {
            if (stream != request) {
                return;
            }
            try {
                decoder.feed(chunk);
            } catch (LlmException e) {
                request.reset();
                streamEnded(request, "an event over " + maxResponseBytes + " bytes");
            }
        });
        resp.exceptionHandler(e -> streamEnded(request, redact(String.valueOf(e.getMessage()))));
        resp.endHandler(v -> streamEnded(request, "the server ended it"));
        resp.resume();
    }

    private void streamEnded(HttpClientRequest request, String why) {
        if (stream == request) {
            stream = null;
            retryLater(why);
        }
    }

    private void retryLater(String why) {
        if (!listening || reconnectTimer != -1) {
            return;
        }
        long delay = backoffMs;
        backoffMs = Math.min(MAX_BACKOFF_MS, backoffMs * 2);
        LOG.debug("mcp notification stream closed, reconnecting [server: {}, delay_ms: {}]: {}", display, delay, why);
        reconnectTimer = vertx.setTimer(delay, id -> connect());
    }

    // --- messages from the server --------------------------------------------------------------------------------

    /** A notification goes to the caller; a request is answered: ping with {}, anything else as not supported. */
    private void serverMessage(JsonObject message, String session, String version) {
        String method = message.getString("method");
        Object id = message.getValue("id");
        if (id == null) {
            try {
                onNotification.accept(method, message.getValue("params") instanceof JsonObject params ? params : new JsonObject());
            } catch (RuntimeException e) {
                LOG.warn("mcp notification handler failed [server: {}, method: {}]", display, method, e);
            }
            return;
        }
        JsonObject answer = new JsonObject().put("jsonrpc", "2.0").put("id", id);
        if ("ping".equals(method)) {
            answer.put("result", new JsonObject());
        } else {
            answer.put("error", new JsonObject().put("code", -32601).put("message", "method not supported by this client"));
        }
        Promise<HttpClientRequest> sent = Promise.promise();
        Future<HttpClientResponse> posted = send(HttpMethod.POST, answer.toBuffer(), session, version, null, sent)
                .onSuccess(resp -> discard(resp, sent.future()));
        bounded(posted, sent.future(), "the answer to " + method).onFailure(e ->
                LOG.debug("mcp answer to a server request failed [server: {}, method: {}]: {}", display, method, e.getMessage()));
    }

    /** Each JSON-RPC message in {@code data} (one object, or a batch of the 2025-03-26 revision). */
    private void forEachMessage(String data, Consumer<JsonObject> handler) {
        Object decoded;
        try {
            decoded = Json.decodeValue(data);
        } catch (DecodeException e) {
            throw failure(Kind.PROTOCOL, 0, "the MCP server at " + display + " sent a message that is not JSON");
        }
        Iterable<?> messages = decoded instanceof JsonArray batch ? batch : List.of(decoded);
        for (Object message : messages) {
            if (!(message instanceof JsonObject json)) {
                throw failure(Kind.PROTOCOL, 0, "the MCP server at " + display + " sent a message that is not a JSON-RPC object");
            }
            handler.accept(json);
        }
    }

    /** The result of a JSON-RPC response, or its error as an {@link McpCallException}. */
    private JsonObject result(JsonObject response, String method) {
        if (response.getValue("error") instanceof JsonObject error) {
            int code = error.getValue("code") instanceof Number number ? number.intValue() : 0;
            String text = error.getValue("message") instanceof String message ? message : "error " + code + " without a message";
            throw failure(Kind.ERROR, code, cut(text, SERVER_MESSAGE_CHARS));
        }
        if (response.getValue("result") instanceof JsonObject result) {
            return result;
        }
        throw failure(Kind.PROTOCOL, 0, "the MCP server at " + display + " answered " + method + " without a result object");
    }

    // --- HTTP --------------------------------------------------------------------------------------------------

    /** One request to the endpoint, at an address the guard checked; {@code sent} gets the request once there is one. */
    private Future<HttpClientResponse> send(HttpMethod method, Buffer body, String session, String version, String lastEvent,
                                            Promise<HttpClientRequest> sent) {
        if (badUrl != null) {
            return Future.failedFuture(failure(Kind.REFUSED, 0, badUrl));
        }
        RequestOptions options;
        try {
            options = new RequestOptions().setMethod(method).setAbsoluteURI(url.toString())
                    .setFollowRedirects(false).setConnectTimeout(timeoutMs);
            headers.forEach(options::putHeader);
        } catch (IllegalArgumentException e) {
            // Vert.x quotes what it rejects; that may be a credential.
            return Future.failedFuture(failure(Kind.REFUSED, 0, "the MCP server's URL or headers are not valid HTTP: "
                    + e.getMessage()));
        }
        options.putHeader("accept", method == HttpMethod.GET ? "text/event-stream" : ACCEPT_BOTH);
        if (body != null) {
            options.putHeader("content-type", "application/json");
        }
        if (session != null) {
            options.putHeader("mcp-session-id", session);
        }
        if (version != null) {
            options.putHeader("mcp-protocol-version", version);
        }
        if (lastEvent != null) {
            options.putHeader("last-event-id", lastEvent);
        }
        // Connect to the address that was checked; the name only goes in Host and TLS (SNI, verification).
        return egress.address(host)
                .recover(refused -> Future.failedFuture(failure(Kind.REFUSED, 0, "the MCP server at " + display
                        + " may not be reached from here: " + refused.getMessage())))
                .compose(address -> client.request(options.setServer(SocketAddress.inetSocketAddress(port, address.getHostAddress()))))
                .onSuccess(sent::tryComplete)
                // Paused at once, on the request's own context: no data is lost before a consumer sets its handlers.
                .compose(request -> (body == null ? request.send() : request.send(body)).onSuccess(HttpClientResponse::pause))
                .recover(e -> Future.failedFuture(e instanceof McpCallException ? e : unreachable(e)));
    }

    /**
     * The body, at most {@code limit} bytes: beyond that a strict read fails (TOO_LARGE) and resets the request, a
     * lenient one keeps the start and drops the rest.
     */
    private Future<Buffer> read(HttpClientResponse resp, int limit, boolean strict, Future<HttpClientRequest> sent) {
        Promise<Buffer> done = Promise.promise();
        Buffer body = Buffer.buffer();
        Runnable tooLarge = () -> {
            done.tryFail(failure(Kind.TOO_LARGE, resp.statusCode(), "the MCP server at " + display + " sent an answer over " + limit + " bytes"));
            sent.onSuccess(HttpClientRequest::reset);
        };
        String length = resp.getHeader("content-length");
        if (strict && length != null && length.matches("\\d{1,18}") && Long.parseLong(length) > limit) {
            tooLarge.run();
            return done.future();
        }
        resp.handler(chunk -> {
            if (body.length() + chunk.length() <= limit) {
                body.appendBuffer(chunk);
            } else if (strict) {
                tooLarge.run();
            } else if (body.length() < limit) {
                body.appendBuffer(chunk.getBuffer(0, limit - body.length()));
            }
        });
        resp.exceptionHandler(e -> done.tryFail(unreachable(e)));
        resp.endHandler(v -> done.tryComplete(body));
        resp.resume();
        return done.future();
    }

    /** Drops the rest of a response we are done with; one that does not end soon is reset, freeing its connection. */
    private void discard(HttpClientResponse resp, Future<HttpClientRequest> sent) {
        boolean[] ended = {false};
        resp.handler(chunk -> {
        });
        resp.exceptionHandler(e -> ended[0] = true);
        resp.endHandler(v -> ended[0] = true);
        resp.resume();
        vertx.setTimer(Math.max(1, Math.min(DRAIN_MS, timeoutMs)), id -> {
            if (!ended[0]) {
                sent.onSuccess(HttpClientRequest::reset);
            }
        });
    }

    private <T> Future<T> bounded(Future<T> outcome, Future<HttpClientRequest> sent, String what) {
        return outcome.timeout(timeoutMs, TimeUnit.MILLISECONDS).recover(failure -> {
            if (failure instanceof TimeoutException) {
                sent.onSuccess(HttpClientRequest::reset);
                return Future.failedFuture(failure(Kind.TIMEOUT, 0, "the MCP server at " + display + " did not answer "
                        + what + " within " + timeoutMs + " ms"));
            }
            return Future.failedFuture(failure);
        });
    }

    /** The server forgot our session: 404 as the spec says, or a 400 that says so (the TypeScript SDK's samples). */
    private static boolean sessionLost(int status, String session, Buffer body) {
        return session != null && (status == 404
                || status == 400 && body.toString().toLowerCase(Locale.ROOT).contains("session"));
    }

    private McpCallException lost(int status, String method) {
        return failure(Kind.PROTOCOL, status, "the MCP server at " + display + " lost the session again right after it began ("
                + method + ", HTTP " + status + ")");
    }

    private McpCallException statusError(int status, HttpClientResponse resp, Buffer body, String method) {
        if (status == 401 || status == 403) {
            return failure(Kind.PROTOCOL, status, "the MCP server at " + display + " refused the credentials (HTTP " + status + ")");
        }
        if (status == 429 || status >= 500) {
            String retryAfter = resp.getHeader("retry-after");
            String hint = retryAfter != null && retryAfter.trim().matches("\\d{1,9}") ? ", retry after " + retryAfter.trim() + " s" : "";
            return failure(Kind.UNREACHABLE, status, "the MCP server at " + display + " answered " + method + " with HTTP "
                    + status + hint);
        }
        String text = redact(body.toString()).strip();
        return failure(Kind.PROTOCOL, status, "the MCP server at " + display + " answered " + method + " with HTTP " + status
                + (text.isEmpty() ? "" : ": " + cut(text, SNIPPET_CHARS)));
    }

    private McpCallException unreachable(Throwable e) {
        return failure(Kind.UNREACHABLE, 0, "the MCP server at " + display + " could not be reached: "
                + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
    }

    private McpCallException failure(Kind kind, int code, String message) {
        return new McpCallException(kind, code, redact(message));
    }

    private static String cut(String text, int chars) {
        return text.length() <= chars ? text : text.substring(0, chars) + "...";
    }

    private static String contentType(HttpClientResponse resp) {
        String type = resp.getHeader("content-type");
        if (type == null) {
            return "";
        }
        int semicolon = type.indexOf(';');
        return (semicolon < 0 ? type : type.substring(0, semicolon)).strip().toLowerCase(Locale.ROOT);
    }

    /** The text with every header value (and the token after an auth scheme) cut out, longest first. */
    private String redact(String text) {
        String clean = text;
        for (String secret : secrets) {
            clean = clean.replace(secret, "[redacted]");
        }
        return clean;
    }

    private static List<String> secrets(Map<String, String> headers) {
        List<String> secrets = new ArrayList<>();
        for (String value : headers.values()) {
            String trimmed = value.strip();
            if (!trimmed.isEmpty()) {
                secrets.add(trimmed);
            }
            int space = trimmed.lastIndexOf(' ');
            if (space > 0 && space < trimmed.length() - 1) {
                secrets.add(trimmed.substring(space + 1));
            }
        }
        secrets.sort(Comparator.comparingInt(String::length).reversed());
        return List.copyOf(secrets);
    }

    /** A response's result and the session id it came with (initialize starts a session). */
    private record Reply(JsonObject result, String session) {
    }

    /** The server forgot the session the request carried; handled by starting a new one, never seen by callers. */
    private static final class SessionLost extends RuntimeException {
        private final int status;

        SessionLost(int status) {
            super("session lost", null, false, false);
            this.status = status;
        }
    }

    /** One request and its answer: a JSON body, or an event stream read until the response with the request's id. */
    private final class Exchange {
        private final long id;
        private final String method;
        private final String session;
        private final String version;
        private final Promise<Reply> done = Promise.promise();
        private final Promise<HttpClientRequest> sent = Promise.promise();
        private String replySession;

        Exchange(String method, String session, String version) {
            this.id = ++lastRequestId;
            this.method = method;
            this.session = session;
            this.version = version;
        }

        Future<Reply> run(JsonObject params) {
            JsonObject message = new JsonObject().put("jsonrpc", "2.0").put("id", id).put("method", method);
            if (params != null) {
                message.put("params", params);
            }
            send(HttpMethod.POST, message.toBuffer(), session, version, null, sent).onComplete(response -> {
                if (response.failed()) {
                    done.tryFail(response.cause());
                } else {
                    answered(response.result());
                }
            });
            // Once timed out, late data of this exchange must not complete it.
            return bounded(done.future(), sent.future(), method).onFailure(done::tryFail);
        }

        private void answered(HttpClientResponse resp) {
            int status = resp.statusCode();
            replySession = resp.getHeader("mcp-session-id");
            String type = contentType(resp);
            if (status == 202) {
                discard(resp, sent.future());
                done.tryFail(failure(Kind.PROTOCOL, status, "the MCP server at " + display + " accepted " + method
                        + " without answering it"));
            } else if (status < 200 || status > 299) {
                read(resp, ERROR_BODY_BYTES, false, sent.future()).onComplete(body -> done.tryFail(body.failed() ? body.cause()
                        : sessionLost(status, session, body.result()) ? new SessionLost(status)
                        : statusError(status, resp, body.result(), method)));
            } else if (type.equals("text/event-stream")) {
                stream(resp);
            } else if (type.equals("application/json")) {
                read(resp, maxResponseBytes, true, sent.future()).onComplete(body -> {
                    if (body.failed()) {
                        done.tryFail(body.cause());
                        return;
                    }
                    handle(body.result().toString());
                    done.tryFail(failure(Kind.PROTOCOL, status, "the MCP server at " + display + " answered " + method
                            + " with JSON that holds no response to it"));
                });
            } else {
                sent.future().onSuccess(HttpClientRequest::reset);
                done.tryFail(failure(Kind.PROTOCOL, status, "the MCP server at " + display + " answered " + method
                        + " with the content type '" + (type.isEmpty() ? "none" : type) + "'"));
            }
        }

        private void stream(HttpClientResponse resp) {
            SseDecoder decoder = new SseDecoder(maxResponseBytes, event -> {
                if (!event.data().isBlank()) {
                    handle(event.data());
                }
            });
            resp.exceptionHandler(e -> done.tryFail(unreachable(e)));
            resp.handler(chunk -> {
                if (done.future().isComplete()) {
                    return;
                }
                try {
                    decoder.feed(chunk);
                } catch (LlmException e) {
                    done.tryFail(failure(Kind.TOO_LARGE, 200, "the MCP server at " + display + " sent an event over "
                            + maxResponseBytes + " bytes in its answer to " + method));
                    sent.future().onSuccess(HttpClientRequest::reset);
                }
            });
            boolean[] ended = {false};
            resp.endHandler(v -> {
                ended[0] = true;
                if (!done.future().isComplete()) {
                    decoder.end();
                    done.tryFail(failure(Kind.PROTOCOL, 200, "the MCP server at " + display
                            + " ended its event stream without the response to " + method));
                }
            });
            // The response is in: read no further; a stream the server does not end promptly is reset.
            done.future().onComplete(reply -> vertx.setTimer(Math.max(1, Math.min(DRAIN_MS, timeoutMs)), t -> {
                if (!ended[0]) {
                    sent.future().onSuccess(HttpClientRequest::reset);
                }
            }));
            resp.resume();
        }

        /** A message on this request's answer: the server's own messages are met, the response completes the call. */
        private void handle(String data) {
            if (done.future().isComplete()) {
                return;
            }
            try {
                forEachMessage(data, message -> {
                    if (message.getValue("method") instanceof String) {
                        serverMessage(message, session == null ? replySession : session, version);
                    } else if (message.getValue("id") instanceof Number number && number.longValue() == id) {
                        respond(message);
                    }
                });
            } catch (McpCallException e) {
                done.tryFail(e);
                sent.future().onSuccess(HttpClientRequest::reset);
            }
        }

        private void respond(JsonObject response) {
            try {
                done.tryComplete(new Reply(result(response, method), replySession));
            } catch (McpCallException e) {
                done.tryFail(e); // the server's JSON-RPC error: the exchange itself went well
            }
        }
    }
}
