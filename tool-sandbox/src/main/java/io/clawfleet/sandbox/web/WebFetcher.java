package io.clawfleet.sandbox.web;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.security.EgressGuard;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientResponse;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.net.SocketAddress;

import java.net.InetAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code web_fetch} on a sandbox node: checks the URL against the {@link WebPolicy}, resolves the host
 * once, checks every address with the {@link EgressGuard}, and connects to that address (never
 * resolving again, so a DNS answer cannot change between check and use); redirects are followed by
 * hand, each one checked the same way. The body is read up to a cap and HTML is turned into text.
 */
public final class WebFetcher {

    /** How host names become addresses; the real one asks the system resolver off the event loop. */
    @FunctionalInterface
    public interface Resolver {
        Future<List<InetAddress>> resolve(String host);
    }

    /**
     * A fetched page.
     *
     * @param url       the URL finally fetched (after redirects)
     * @param text      its text (HTML turned into text), or a note saying why there is none
     * @param truncated whether the body was longer than the cap and cut
     */
    public record Page(String url, int status, String contentType, String title, String text, boolean truncated) {
    }

    private static final Pattern CHARSET = Pattern.compile("(?i)charset=\"?([A-Za-z0-9._:-]+)\"?");
    private static final String USER_AGENT = "Clawfleet/0.1 (web_fetch; +https://github.com/clawfleet)";

    private final Vertx vertx;
    private final HttpClient http;
    private final WebPolicy policy;
    private final EgressGuard guard;
    private final ClawfleetConfig.Web config;

    public WebFetcher(Vertx vertx, HttpClient http, ClawfleetConfig.Web config, Resolver resolver) {
        this.vertx = Objects.requireNonNull(vertx);
        this.http = Objects.requireNonNull(http);
        this.config = Objects.requireNonNull(config);
        this.policy = new WebPolicy(config);
        // The same guard as the gateway's (one list of blocked ranges and encodings); the operator's private
        // ranges are the only exceptions, and are address blocks, never trusted names.
        Objects.requireNonNull(resolver);
        this.guard = new EgressGuard(config.allowedPrivateRanges(), resolver::resolve);
    }

    /** The system resolver, run on a worker thread. */
    public static Resolver systemResolver(Vertx vertx) {
        return host -> vertx.executeBlocking(() -> List.of(InetAddress.getAllByName(host)), false);
    }

    /** Fails with a {@link WebPolicy.WebRefusal} when a rule or the guard refuses, else with the network's error. */
    public Future<Page> fetch(String url) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(config.timeoutMs());
        return attempt(url, 0, deadline);
    }

    private Future<Page> attempt(String url, int redirects, long deadline) {
        WebPolicy.Target target;
        try {
            target = policy.check(url);
        } catch (WebPolicy.WebRefusal e) {
            return Future.failedFuture(e);
        }
        return address(target.host()).compose(address -> {
            long remaining = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (remaining <= 0) {
                return Future.failedFuture(new WebPolicy.WebRefusal("the fetch took longer than " + config.timeoutMs() + " ms"));
            }
            RequestOptions options = new RequestOptions()
                    .setMethod(HttpMethod.GET)
                    // Connect to the address that was checked; the name only goes in Host and TLS (SNI, verification).
                    .setServer(SocketAddress.inetSocketAddress(target.port(), address.getHostAddress()))
                    .setHost(target.host())
                    .setPort(target.port())
                    .setSsl(target.https())
                    .setURI(target.requestUri())
                    .setFollowRedirects(false)
                    .setConnectTimeout(Math.min(remaining, 10_000))
                    .setIdleTimeout(remaining) // milliseconds, like every RequestOptions timeout
                    .putHeader("User-Agent", USER_AGENT)
                    .putHeader("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5");
            // handle() sets the response's handlers in the send's own callback (see BraveSearch.search).
            return http.request(options)
                    .compose(request -> request.send().compose(response -> handle(target, response, redirects, deadline)))
                    .timeout(remaining, TimeUnit.MILLISECONDS);
        });
    }

    /** The checked address to connect to; the guard's refusal becomes the web policy's, which callers map to denied. */
    private Future<InetAddress> address(String host) {
        return guard.address(host).recover(e -> Future.failedFuture(e instanceof EgressGuard.Refused
                ? new WebPolicy.WebRefusal(e.getMessage()) : e));
    }

    private Future<Page> handle(WebPolicy.Target target, HttpClientResponse response, int redirects, long deadline) {
        int status = response.statusCode();
        String location = response.getHeader("Location");
        if (status >= 300 && status < 400 && location != null) {
            response.request().reset();
            if (redirects >= config.maxRedirects()) {
                return Future.failedFuture(new WebPolicy.WebRefusal("more than " + config.maxRedirects() + " redirects"));
            }
            String next;
            try {
                next = target.uri().resolve(location.strip()).toString();
            } catch (IllegalArgumentException e) {
                return Future.failedFuture(new WebPolicy.WebRefusal("the redirect to '" + location + "' is not a valid URL"));
            }
            return attempt(next, redirects + 1, deadline);
        }
        return body(response).map(body -> page(target.uri(), status, response.getHeader("Content-Type"), body));
    }

    private record Body(byte[] bytes, boolean truncated) {
    }

    private Future<Body> body(HttpClientResponse response) {
        Promise<Body> done = Promise.promise();
        Buffer kept = Buffer.buffer();
        long max = config.maxResponseBytes();
        boolean[] cut = {false};
        response.handler(chunk -> {
            if (cut[0]) {
                return;
            }
            long room = max - kept.length();
            if (chunk.length() > room) {
                kept.appendBuffer(chunk, 0, (int) room);
                cut[0] = true;
                // Complete before the reset: the reset fails the response at once, and that failure must not win.
                done.tryComplete(new Body(kept.getBytes(), true));
                response.request().reset();
            } else {
                kept.appendBuffer(chunk);
            }
        });
        response.endHandler(v -> done.tryComplete(new Body(kept.getBytes(), cut[0])));
        response.exceptionHandler(done::tryFail);
        return done.future();
    }

    private Page page(URI url, int status, String contentType, Body body) {
        String type = contentType == null ? "" : contentType.split(";")[0].strip().toLowerCase(Locale.ROOT);
        Matcher charsetMatch = CHARSET.matcher(contentType == null ? "" : contentType);
        String charset = charsetMatch.find() ? charsetMatch.group(1) : null;
        if (type.equals("text/html") || type.equals("application/xhtml+xml")) {
            HtmlText.Page page = HtmlText.of(body.bytes(), charset, url.toString());
            return new Page(url.toString(), status, type, page.title(), page.text(), body.truncated());
        }
        if (isText(type) || (type.isEmpty() && isUtf8(body.bytes()))) {
            return new Page(url.toString(), status, type, null, decode(body.bytes(), charset), body.truncated());
        }
        return new Page(url.toString(), status, type, null, "(" + (type.isEmpty() ? "binary content" : type) + ", "
                + body.bytes().length + (body.truncated() ? "+" : "") + " bytes: not text, not shown)", body.truncated());
    }

    private static boolean isText(String type) {
        return type.startsWith("text/") || type.equals("application/json") || type.equals("application/xml")
                || type.endsWith("+json") || type.endsWith("+xml") || type.equals("application/javascript")
                || type.equals("application/x-yaml") || type.equals("application/yaml");
    }

    private static boolean isUtf8(byte[] bytes) {
        try {
            StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(bytes));
            return true;
        } catch (java.nio.charset.CharacterCodingException e) {
            return false;
        }
    }

    private static String decode(byte[] bytes, String charset) {
        try {
            return new String(bytes, charset == null ? StandardCharsets.UTF_8 : java.nio.charset.Charset.forName(charset));
        } catch (IllegalArgumentException e) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
    }
}
