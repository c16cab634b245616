package io.clawfleet.shared.http;

import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Turns every failure on a router into a JSON error body with the right status. */
public final class HttpErrors {

    private static final Logger LOG = LoggerFactory.getLogger(HttpErrors.class);
    /** Context key of the {@link ApiException} a request was answered with (read by the audit of writes). */
    public static final String ERROR = "clawfleet.error";

    private HttpErrors() {
    }

    public static void install(Router router, long maxBodyBytes) {
        String tooLarge = "the request body is larger than the limit of " + maxBodyBytes + " bytes";
        router.errorHandler(404, ctx -> send(ctx, new ApiException(404, "not_found",
                "no route for " + ctx.request().method() + " " + ctx.request().path())));
        router.errorHandler(405, ctx -> send(ctx, new ApiException(405, "method_not_allowed",
                ctx.request().method() + " is not allowed on " + ctx.request().path())));
        router.errorHandler(413, ctx -> send(ctx, new ApiException(413, "payload_too_large", tooLarge)));
        router.errorHandler(500, ctx -> sendFailure(ctx, tooLarge));
        router.route().failureHandler(ctx -> sendFailure(ctx, tooLarge));
    }

    private static void sendFailure(RoutingContext ctx, String tooLarge) {
        Throwable failure = ctx.failure();
        if (failure instanceof ApiException api) {
            send(ctx, api);
        } else if (failure instanceof io.clawfleet.shared.store.LimitReachedException limit) {
            // a tenant at one of its limits, from any handler: the refusal names the limit
            send(ctx, new ApiException(409, "limit_reached", limit.getMessage()));
        } else if (ctx.statusCode() == 413) {
            send(ctx, new ApiException(413, "payload_too_large", tooLarge));
        } else if (failure == null && ctx.statusCode() >= 400) {
            send(ctx, new ApiException(ctx.statusCode(), "http_" + ctx.statusCode(), "request failed"));
        } else {
            LOG.error("request failed [method: {}, path: {}]", ctx.request().method(), ctx.request().path(), failure);
            send(ctx, new ApiException(500, "internal", "internal error; see the server log"));
        }
    }

    public static void send(RoutingContext ctx, ApiException error) {
        ctx.put(ERROR, error);
        HttpServerResponse response = ctx.response();
        if (response.headWritten()) {
            // Streaming already started: the best we can do is end it.
            if (!response.ended()) {
                response.end();
            }
            return;
        }
        response.setStatusCode(error.status()).putHeader("content-type", "application/json");
        if (error.retryAfterSeconds() >= 0) {
            response.putHeader("retry-after", Long.toString(error.retryAfterSeconds()));
        }
        error.headers().forEach(response::putHeader);
        JsonObject body = body(error.code(), error.getMessage());
        if (ctx.request().path().startsWith("/v1/")) {
            // The OpenAI-compatible API answers errors as OpenAI does: {"error":{"message","type","param","code"}}.
            body.getJsonObject("error").put("type", "insufficient_quota".equals(error.code()) ? "insufficient_quota"
                    : error.status() == 429 ? "requests"
                    : error.status() >= 500 ? "server_error" : "invalid_request_error").putNull("param");
        }
        response.end(body.encode());
    }

    public static JsonObject body(String code, String message) {
        return new JsonObject().put("error", new JsonObject().put("code", code).put("message", message));
    }
}
