package io.clawfleet.gateway.slack;

import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.security.SecretException;
import io.clawfleet.shared.store.ChannelBotStore;
import io.vertx.core.Future;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * {@code POST /hooks/slack/{id}}: the Request URL of a Slack app's Event Subscriptions. Any gateway serves it. Every
 * request must be signed as Slack signs them (signing secret v0): {@code X-Slack-Signature} is {@code v0=} and the hex
 * HMAC-SHA256, under the app's signing secret, of {@code v0:<X-Slack-Request-Timestamp>:<body>}, compared in constant
 * time; a timestamp more than {@link #WINDOW_SECONDS} from now is refused (a recorded request cannot be replayed). An
 * unknown id, a wrong signature and an old timestamp get the same 401.
 *
 * <p>{@code url_verification} is answered with its challenge. An {@code event_callback} is answered {@code 200} only
 * once its message is in the inbox (or kept aside, over a quota), well inside the 3 seconds Slack waits; the turn runs
 * after. On anything else Slack retries ({@code X-Slack-Retry-Num}), and the message's own id makes a retry, or the same
 * message reaching two gateways, one message.
 */
public final class SlackWebhook {

    public static final String PATH = "/hooks/slack/:id";
    /** How far a request's timestamp may be from this gateway's clock, as Slack advises. */
    static final long WINDOW_SECONDS = 300;
    private static final Logger LOG = LoggerFactory.getLogger(SlackWebhook.class);

    private final ChannelBotStore bots;
    private final SlackEvents events;
    private final Metrics metrics;
    private final LongSupplier epochSeconds;

    public SlackWebhook(ChannelBotStore bots, SlackEvents events, Metrics metrics) {
        this(bots, events, metrics, () -> System.currentTimeMillis() / 1000);
    }

    SlackWebhook(ChannelBotStore bots, SlackEvents events, Metrics metrics, LongSupplier epochSeconds) {
        this.bots = Objects.requireNonNull(bots);
        this.events = Objects.requireNonNull(events);
        this.metrics = Objects.requireNonNull(metrics);
        this.epochSeconds = Objects.requireNonNull(epochSeconds);
    }

    /** Slack's v0 signature of a request: {@code v0=} and the hex HMAC-SHA256 of {@code v0:timestamp:body}. */
    public static String signature(String signingSecret, String timestamp, Buffer body) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(signingSecret.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
            mac.update(("v0:" + timestamp + ":").getBytes(StandardCharsets.UTF_8));
            return "v0=" + HexFormat.of().formatHex(mac.doFinal(body.getBytes()));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
        }
    }

    public void handle(RoutingContext ctx) {
        long id;
        try {
            id = Long.parseLong(ctx.pathParam("id"));
        } catch (NumberFormatException e) {
            refuse(ctx, "id");
            return;
        }
        String timestamp = ctx.request().getHeader("X-Slack-Request-Timestamp");
        String signature = ctx.request().getHeader("X-Slack-Signature");
        if (timestamp == null || signature == null || signature.length() > 128 || !timestamp.matches("[0-9]{1,12}")) {
            refuse(ctx, "signature");
            return;
        }
        if (Math.abs(epochSeconds.getAsLong() - Long.parseLong(timestamp)) > WINDOW_SECONDS) {
            refuse(ctx, "stale");
            return;
        }
        Buffer body = ctx.body().buffer() == null ? Buffer.buffer() : ctx.body().buffer();
        bots.webhookTarget(id, Channels.SLACK).onComplete(found -> {
            if (found.failed()) {
                String errorId = ApiException.errorId(found.cause(), found.cause() instanceof SecretException
                        ? "a Slack app's secrets do not open [channel: " + id + "]" : "a Slack app cannot be read [channel: " + id + "]");
                ctx.fail(ApiException.unavailable("the event cannot be taken now (error id " + errorId + "); Slack sends it again", 5));
                return;
            }
            if (found.result().isEmpty() || !MessageDigest.isEqual(signature(found.result().get().bot().signingSecret(), timestamp, body)
                    .getBytes(StandardCharsets.UTF_8), signature.getBytes(StandardCharsets.UTF_8))) {
                refuse(ctx, "signature");
                return;
            }
            take(ctx, found.result().get(), body);
        });
    }

    private void take(RoutingContext ctx, ChannelBotStore.WebhookTarget target, Buffer body) {
        JsonObject envelope;
        try {
            envelope = body.toJsonObject();
        } catch (RuntimeException e) {
            envelope = null;
        }
        if (envelope == null) {
            ctx.fail(ApiException.badRequest("expected a Slack Events API request: a JSON object"));
            return;
        }
        String type = envelope.getString("type", "");
        if ("url_verification".equals(type) && envelope.getValue("challenge") instanceof String challenge) {
            ctx.json(new JsonObject().put("challenge", challenge));
            return;
        }
        String tenantId = target.bot().tenantId();
        if (!"event_callback".equals(type) || !(envelope.getValue("event") instanceof JsonObject event)) {
            metrics.increment("clawfleet.slack.skipped", "reason", "not_event", "tenant", tenantId);
            ctx.response().setStatusCode(200).end(); // app_rate_limited and the like: nothing to take
            return;
        }
        if (!target.accepting()) {
            // A suspended tenant, a bot being deleted, a disabled account: Slack retries (three times, over some minutes).
            metrics.increment("clawfleet.slack.webhook.deferred", "tenant", tenantId);
            ctx.fail(ApiException.unavailable("this bot does not take events now; Slack sends them again", 60));
            return;
        }
        if (ctx.request().getHeader("X-Slack-Retry-Num") != null) {
            metrics.increment("clawfleet.slack.webhook.retried", "tenant", tenantId);
        }
        Future<Void> taken;
        try {
            taken = events.accept(target.bot(), event);
        } catch (RuntimeException e) {
            taken = Future.failedFuture(e); // answered below: a request must never be left without an answer
        }
        taken.onComplete(accepted -> {
            if (accepted.succeeded()) {
                ctx.response().setStatusCode(200).end();
            } else if (accepted.cause() instanceof ApiException refused) {
                ctx.fail(refused); // rate limit or backlog: Slack retries
            } else {
                LOG.warn("slack event not taken, Slack will send it again [tenant: {}, channel: {}]: {}", tenantId,
                        target.bot().id(), accepted.cause().getMessage());
                ctx.fail(ApiException.unavailable("the event cannot be taken now; Slack sends it again", 1));
            }
        });
    }

    private void refuse(RoutingContext ctx, String reason) {
        metrics.increment("clawfleet.slack.webhook.refused", "reason", reason);
        ctx.fail(ApiException.unauthorized("this webhook does not exist or the request is not signed by its Slack app"));
    }
}
