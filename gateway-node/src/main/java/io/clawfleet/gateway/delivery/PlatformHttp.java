package io.clawfleet.gateway.delivery;

import io.clawfleet.shared.security.EgressGuard;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import io.vertx.core.net.SocketAddress;

import java.net.InetAddress;
import java.net.URI;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * How a gateway calls a chat platform's API (Telegram's Bot API, Slack's Web API): one pooled HTTP client, and every
 * request sent to an address the {@link EgressGuard} allows, since a tenant chooses its account's API URL. Failures to
 * reach the platform are {@link DeliveryException}s that may be retried; what the platform answered is the caller's to
 * read.
 */
public final class PlatformHttp {

    /** What the platform answered. */
    public record Reply(int status, MultiMap headers, Buffer body) {
    }

    private final HttpClient client;
    private final EgressGuard egress;

    public PlatformHttp(Vertx vertx, EgressGuard egress) {
        this.egress = Objects.requireNonNull(egress);
        this.client = vertx.createHttpClient(new HttpClientOptions()
                        .setKeepAlive(true)
                        .setTcpNoDelay(true)
                        .setVerifyHost(true)
                        .setForceSni(true)
                        .setConnectTimeout(10_000)
                        .setIdleTimeout(60)
                        .setIdleTimeoutUnit(TimeUnit.SECONDS),
                new PoolOptions().setHttp1MaxSize(64).setMaxWaitQueueSize(10_000));
    }

    /**
     * POSTs {@code body} to {@code uri}, at the address its host resolved to once checked (the name goes only in
     * {@code Host} and TLS: SNI and verification). {@code what} names the call in errors ("Telegram sendMessage"); the
     * URI itself never goes in one (Telegram's carries the bot token).
     */
    public Future<Reply> post(String what, URI uri, MultiMap headers, Buffer body, long timeoutMs) {
        return request(HttpMethod.POST, what, uri, headers, body, timeoutMs);
    }

    /** As {@link #post}, with any method; {@code body} null sends none. */
    public Future<Reply> request(HttpMethod method, String what, URI uri, MultiMap headers, Buffer body, long timeoutMs) {
        boolean https = "https".equalsIgnoreCase(uri.getScheme());
        int port = uri.getPort() != -1 ? uri.getPort() : https ? 443 : 80;
        return egress.address(uri.getHost())
                .recover(refused -> Future.failedFuture(new DeliveryException(what + " refused before connecting: "
                        + refused.getMessage(), false, -1)))
                .compose(address -> send(method, what, uri, https, port, address, headers, body, timeoutMs));
    }

    private Future<Reply> send(HttpMethod method, String what, URI uri, boolean https, int port, InetAddress address, MultiMap headers, Buffer body,
                               long timeoutMs) {
        RequestOptions options = new RequestOptions()
                .setMethod(method)
                .setServer(SocketAddress.inetSocketAddress(port, address.getHostAddress()))
                .setHost(uri.getHost())
                .setPort(port)
                .setSsl(https)
                .setURI(uri.getRawQuery() == null ? uri.getRawPath() : uri.getRawPath() + "?" + uri.getRawQuery())
                .setHeaders(headers)
                .setIdleTimeout(timeoutMs);
        return client.request(options)
                .compose(request -> body == null ? request.send() : request.send(body))
                .compose(response -> response.body().map(read -> new Reply(response.statusCode(), response.headers(), read)))
                .timeout(timeoutMs, TimeUnit.MILLISECONDS)
                .recover(failure -> Future.failedFuture(failure instanceof DeliveryException ? failure
                        : new DeliveryException(what + " failed: " + failure.getClass().getSimpleName()
                                + (failure.getMessage() == null ? "" : " " + failure.getMessage()), true, -1)));
    }
}
