package io.clawfleet.gateway.webhooks;

import io.clawfleet.gateway.delivery.PlatformHttp;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.WebhookStore;
import io.clawfleet.shared.store.WebhookStore.Due;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpMethod;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.URI;
import java.util.List;
import java.util.Objects;

/**
 * Sends the due webhook deliveries of every tenant, from every gateway: each round claims up to {@link #BATCH} of them
 * (a claim holds {@link #CLAIM_MS}, longer than a try may take, so two gateways never send one at once unless a
 * gateway dies mid-try: receivers drop a repeat by its {@code webhook-id}), signs each
 * ({@link StandardWebhooks}) and posts it to its endpoint, at an address the egress rules allow. A 2xx delivers it; any
 * other answer, or none within {@link #TIMEOUT_MS}, schedules the next try by {@code webhooks.retryScheduleMs} or fails
 * it for good, and an endpoint failing for {@code webhooks.disableAfterMs} is turned off (with an audit entry). Runs on
 * the gateway's event loop; a round starts only once the last one is done.
 */
public final class WebhookDispatcher {

    static final int BATCH = 64;
    static final long CLAIM_MS = 60_000;
    static final long TIMEOUT_MS = 15_000;
    private static final long ROUND_MS = 500;
    private static final long PRUNE_MS = 3_600_000;
    private static final Logger LOG = LoggerFactory.getLogger(WebhookDispatcher.class);

    private final Vertx vertx;
    private final String nodeId;
    private final WebhookStore store;
    private final PlatformHttp http;
    private final ClawfleetConfig.Webhooks config;
    private final Metrics metrics;
    private boolean running;
    private boolean stopped;
    private long timer = -1;
    private long pruneTimer = -1;

    public WebhookDispatcher(Vertx vertx, String nodeId, WebhookStore store, PlatformHttp http, ClawfleetConfig.Webhooks config,
                             Metrics metrics) {
        this.vertx = Objects.requireNonNull(vertx);
        this.nodeId = Objects.requireNonNull(nodeId);
        this.store = Objects.requireNonNull(store);
        this.http = Objects.requireNonNull(http);
        this.config = Objects.requireNonNull(config);
        this.metrics = Objects.requireNonNull(metrics);
    }

    public void start() {
        timer = vertx.setPeriodic(ROUND_MS, id -> round());
        pruneTimer = vertx.setPeriodic(PRUNE_MS, id -> prune());
    }

    public void stop() {
        stopped = true;
        vertx.cancelTimer(timer);
        vertx.cancelTimer(pruneTimer);
    }

    private void round() {
        if (running || stopped) {
            return;
        }
        running = true;
        store.claimDue(nodeId, CLAIM_MS, BATCH)
                .compose(due -> Future.join(due.stream().map(this::send).toList()))
                .onFailure(e -> LOG.warn("webhook round failed [node: {}]: {}", nodeId, e.getMessage()))
                .onComplete(done -> running = false);
    }

    private Future<Void> send(Due due) {
        long timestamp = System.currentTimeMillis() / 1000;
        URI uri;
        try {
            uri = URI.create(due.url());
        } catch (IllegalArgumentException e) {
            return record(due, null, "the endpoint URL is not a valid URL");
        }
        MultiMap headers = MultiMap.caseInsensitiveMultiMap()
                .add("content-type", "application/json")
                .add("user-agent", "Clawfleet-Webhooks/1")
                .add("webhook-id", due.id())
                .add("webhook-timestamp", Long.toString(timestamp))
                .add("webhook-signature", StandardWebhooks.sign(due.secret(), due.id(), timestamp, due.payload()));
        return http.request(HttpMethod.POST, "webhook " + due.id(), uri, headers, Buffer.buffer(due.payload()), TIMEOUT_MS)
                .transform(answer -> {
                    if (answer.succeeded() && answer.result().status() / 100 == 2) {
                        metrics.increment("clawfleet.webhook.deliveries", "tenant", due.tenantId(), "outcome", "delivered");
                        return store.delivered(due, answer.result().status());
                    }
                    return answer.succeeded() ? record(due, answer.result().status(), "answered " + answer.result().status())
                            : record(due, null, answer.cause().getMessage());
                })
                .recover(e -> {
                    LOG.warn("a webhook delivery's outcome was not recorded; it is tried again once its claim runs out "
                            + "[tenant: {}, delivery: {}]: {}", due.tenantId(), due.id(), e.getMessage());
                    return Future.succeededFuture();
                });
    }

    /** A failed try: the next one by the schedule, or none. */
    private Future<Void> record(Due due, Integer status, String error) {
        List<Long> schedule = config.retryScheduleMs();
        long retryIn = due.attempts() < schedule.size() ? schedule.get(due.attempts()) : -1;
        metrics.increment("clawfleet.webhook.deliveries", "tenant", due.tenantId(), "outcome", retryIn < 0 ? "failed" : "retry");
        return store.failed(due, status, error, retryIn, config.disableAfterMs()).map(disabled -> {
            if (disabled) {
                metrics.increment("clawfleet.webhook.endpoints.disabled", "tenant", due.tenantId());
                LOG.warn("a webhook endpoint was turned off: none of its deliveries succeeded for {} ms [tenant: {}, bot: {}, "
                        + "endpoint: {}]: {}", config.disableAfterMs(), due.tenantId(), due.botId(), due.endpointId(), error);
            }
            return null;
        });
    }

    private void prune() {
        prune(0).onSuccess(n -> {
                    if (n > 0) {
                        LOG.info("finished webhook deliveries pruned [count: {}, after days: {}]", n, config.deliveryDays());
                    }
                })
                .onFailure(e -> LOG.warn("finished webhook deliveries not pruned: {}", e.getMessage()));
    }

    /** Batches of 1,000 until none is left (at most 1,000 batches a pass). */
    private Future<Integer> prune(int done) {
        return store.pruneFinished(config.deliveryDays(), 1_000).compose(n -> n < 1_000 || done >= 999_000 || stopped
                ? Future.succeededFuture(done + n) : prune(done + n));
    }
}
