package io.clawfleet.gateway.http;

import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.http.HttpErrors;
import io.clawfleet.shared.store.LimitReachedException;
import io.vertx.core.Vertx;
import io.vertx.core.http.HttpServer;
import io.vertx.ext.web.Router;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/** The answers to a gateway's failures that are not ApiExceptions, on a router set up as a node sets up its own. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GatewayErrorsTest {

    private static final LimitReachedException BOTS = new LimitReachedException("bots", 2, "bots");

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private Vertx vertx;
    private HttpServer server;

    @BeforeAll
    void start() {
        vertx = Vertx.vertx();
        Router router = Router.router(vertx);
        // as on a node: HttpErrors first (NodeRuntime), then the gateway's routes
        HttpErrors.install(router, 1024);
        router.get("/api/v1/limit").handler(ctx -> ctx.fail(BOTS));
        router.get("/api/v1/thrown").handler(ctx -> {
            throw BOTS;
        });
        router.get("/api/v1/api-exception").handler(ctx -> ctx.fail(new ApiException(409, "conflict", "taken")));
        server = result(vertx.createHttpServer().requestHandler(router).listen(0, "127.0.0.1"));
    }

    @AfterAll
    void stop() {
        result(vertx.close());
    }

    @Test
    void aTenantAtALimitGets409LimitReachedNamingIt() throws Exception {
        for (String path : new String[] {"/api/v1/limit", "/api/v1/thrown"}) {
            HttpResponse<String> answer = get(path);
            assertThat(answer.statusCode()).as(path).isEqualTo(409);
            assertThat(answer.headers().firstValue("content-type")).as(path).contains("application/json");
            assertThat(answer.body()).as(path).isEqualTo("{\"error\":{\"code\":\"limit_reached\",\"message\":\"this tenant may have "
                    + "at most 2 bots (its limit 'bots'); remove some, or ask the operator to raise the limit\"}}");
        }
    }

    @Test
    void otherFailuresGoOnToHttpErrors() throws Exception {
        HttpResponse<String> answer = get("/api/v1/api-exception");
        assertThat(answer.statusCode()).isEqualTo(409);
        assertThat(answer.body()).isEqualTo("{\"error\":{\"code\":\"conflict\",\"message\":\"taken\"}}");
    }

    @Test
    void onlyApiExceptionsAndLimitsAreAnsweredAsTheyAre() {
        assertThat(GatewayErrors.answered(BOTS)).isTrue();
        assertThat(GatewayErrors.answered(ApiException.badRequest("x"))).isTrue();
        assertThat(GatewayErrors.answered(new IllegalArgumentException("x"))).isFalse();
        assertThat(GatewayErrors.answered(new IllegalStateException("x"))).isFalse();
    }

    private HttpResponse<String> get(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.actualPort() + path))
                .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString());
    }
}
