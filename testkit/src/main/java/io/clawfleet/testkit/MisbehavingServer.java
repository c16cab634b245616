package io.clawfleet.testkit;

import io.vertx.core.Handler;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.HttpServerRequest;

import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;

/** A loopback HTTP server scripted by hand, for what the mock model never does: break mid-stream, echo secrets. */
public final class MisbehavingServer {

    private final HttpServer server;
    private final AtomicInteger requests;

    private MisbehavingServer(HttpServer server, AtomicInteger requests) {
        this.server = server;
        this.requests = requests;
    }

    public static MisbehavingServer start(Vertx vertx, Handler<HttpServerRequest> handler) {
        AtomicInteger counter = new AtomicInteger();
        HttpServer server = result(vertx.createHttpServer().requestHandler(request -> {
            counter.incrementAndGet();
            request.body().onSuccess(body -> handler.handle(request));
        }).listen(0, "127.0.0.1"));
        return new MisbehavingServer(server, counter);
    }

    public String url() {
        return "http://127.0.0.1:" + server.actualPort();
    }

    public int requests() {
        return requests.get();
    }

    /** Answers with the status and a body that repeats every request header, as some endpoints' errors do. */
    public static Handler<HttpServerRequest> echoingHeaders(int status) {
        return request -> {
            StringBuilder body = new StringBuilder("{\"error\":\"invalid credentials, you sent:");
            request.headers().forEach(h -> body.append(' ').append(h.getKey()).append('=').append(h.getValue()));
            request.response().setStatusCode(status).end(body.append("\"}").toString());
        };
    }

    /** Starts a 200 event stream, writes {@code events} and then drops the connection. */
    public static Handler<HttpServerRequest> breakingAfter(String events) {
        return request -> {
            request.response().setChunked(true).putHeader("content-type", "text/event-stream").write(events);
            request.connection().close();
        };
    }
}
