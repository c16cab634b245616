package io.clawfleet.gateway.discord;

import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.security.EgressGuard;
import io.clawfleet.shared.store.ChannelBot;
import io.clawfleet.shared.store.ChannelBotStore;
import io.clawfleet.shared.store.ChannelBotStore.GatewaySession;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.http.WebSocket;
import io.vertx.core.http.WebSocketClient;
import io.vertx.core.http.WebSocketClientOptions;
import io.vertx.core.http.WebSocketConnectOptions;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.URI;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Holds the Discord Gateway connections of the bots this gateway node leases. Exactly one node holds a bot's connection
 * at a time (the polling lease of {@code channel_bots}, renewed every {@link #LEASE_MS}/3 together with where the
 * session stands: its id, its resume URL and the sequence number of the last event taken). Events are taken one by one
 * in sequence order and the sequence moves only past events in the inbox; a node that takes the lease over (the holder
 * died, or let go on shutdown) resumes that session from there, Discord sends again what followed, and the inbox's
 * idempotency keys (the message ids) make those no-ops. A session Discord will not resume is identified afresh.
 *
 * <p>Protocol (v10, JSON): Hello (op 10) gives the heartbeat interval; Identify (op 2) or Resume (op 6); Heartbeat (op 1)
 * every interval with the last sequence, and a missing Heartbeat ACK (op 11) means a dead connection: close (not with
 * 1000/1001, which would end the session) and resume; Reconnect (op 7): resume; Invalid Session (op 9): resume when it
 * says so, else identify again after 1-5 s. Close codes 4004 and 4010-4014 (bad token, intents) are not retried.
 */
public final class DiscordGateway {

    private static final Logger LOG = LoggerFactory.getLogger(DiscordGateway.class);
    static final long LEASE_MS = 15_000;
    private static final long CLAIM_EVERY_MS = 2_000;
    private static final long MAX_BACKOFF_MS = 30_000;
    /** Guild messages, direct messages and their content. */
    static final int INTENTS = (1 << 9) | (1 << 12) | (1 << 15);
    private static final Set<Integer> FATAL = Set.of(4004, 4010, 4011, 4012, 4013, 4014);
    /** Closes that keep the session resumable (anything but 1000 and 1001). */
    private static final short KEEP_SESSION = 4000;

    private final Vertx vertx;
    private final String nodeId;
    private final ChannelBotStore bots;
    private final DiscordApi api;
    private final DiscordEvents events;
    private final EgressGuard egress;
    private final Metrics metrics;
    private final WebSocketClient client;
    private final Map<Long, Session> sessions = new HashMap<>();
    private long claimTimer = -1;
    private boolean stopped;

    public DiscordGateway(Vertx vertx, String nodeId, ChannelBotStore bots, DiscordApi api, DiscordEvents events, EgressGuard egress,
                          Metrics metrics) {
        this.vertx = Objects.requireNonNull(vertx);
        this.nodeId = Objects.requireNonNull(nodeId);
        this.bots = Objects.requireNonNull(bots);
        this.api = Objects.requireNonNull(api);
        this.events = Objects.requireNonNull(events);
        this.egress = Objects.requireNonNull(egress);
        this.metrics = Objects.requireNonNull(metrics);
        this.client = vertx.createWebSocketClient(new WebSocketClientOptions().setMaxFrameSize(1 << 20)
                .setMaxMessageSize(16 << 20).setConnectTimeout(10_000));
        metrics.gauge("clawfleet.discord.sessions", sessions::size, "node", nodeId);
    }

    public void start() {
        claimTimer = vertx.setPeriodic(CLAIM_EVERY_MS, id -> claim());
        claim();
    }

    /** Lets every connection go, keeping the sessions resumable, and the leases, so another node takes them at once. */
    public Future<Void> stop() {
        stopped = true;
        if (claimTimer >= 0) {
            vertx.cancelTimer(claimTimer);
        }
        List<Future<Void>> released = new ArrayList<>();
        for (Session session : new ArrayList<>(sessions.values())) {
            released.add(session.close().compose(v -> bots.release(session.bot.id(), nodeId)));
        }
        sessions.clear();
        return Future.join(released).<Void>mapEmpty().eventually(client::close);
    }

    private void claim() {
        if (stopped) {
            return;
        }
        bots.claimPolling(nodeId, LEASE_MS, 1_000, Channels.DISCORD).onSuccess(claimed -> {
            for (ChannelBot bot : claimed) {
                if (!sessions.containsKey(bot.id())) {
                    Session session = new Session(bot);
                    sessions.put(bot.id(), session);
                    session.start();
                }
            }
        }).onFailure(e -> LOG.warn("cannot claim discord bots to connect [node: {}]: {}", nodeId, e.getMessage()));
    }

    /** One bot's Gateway connection, on this gateway's event loop. */
    private final class Session {
        final ChannelBot bot;
        WebSocket socket;
        String sessionId;
        String resumeUrl;
        /** The last event taken (in the inbox, or skipped); what a resume starts after. */
        long taken;
        /** The last event received (heartbeats carry it). */
        long received;
        boolean acked = true;
        long heartbeatTimer = -1;
        long leaseTimer = -1;
        int failures;
        boolean closed;
        Future<Void> chain = Future.succeededFuture();

        Session(ChannelBot bot) {
            this.bot = bot;
        }

        void start() {
            LOG.info("connecting discord bot [bot: {}, tenant: {}, node: {}]", bot.name(), bot.tenantId(), nodeId);
            leaseTimer = vertx.setPeriodic(LEASE_MS / 3, id -> hold());
            bots.gatewaySession(bot.id()).onComplete(read -> {
                if (read.succeeded()) {
                    sessionId = read.result().sessionId();
                    resumeUrl = read.result().resumeUrl();
                    taken = read.result().seq();
                    received = taken;
                }
                connect();
            });
        }

        /** Renews the lease with where the session stands; lets the bot go when the lease is not this node's any more. */
        Future<Void> hold() {
            if (closed) {
                return Future.succeededFuture();
            }
            return bots.holdGateway(bot.id(), nodeId, new GatewaySession(sessionId, resumeUrl, taken), LEASE_MS)
                    .onSuccess(held -> {
                        if (!held) {
                            LOG.info("discord bot {} is connected by another gateway now, disabled, or its tenant or bot is not "
                                    + "active [node: {}]", bot.name(), nodeId);
                            sessions.remove(bot.id(), this);
                            close();
                        }
                    })
                    .onFailure(e -> LOG.warn("discord lease not renewed [bot: {}]: {}", bot.name(), e.getMessage()))
                    .mapEmpty();
        }

        void connect() {
            if (closed || stopped) {
                return;
            }
            boolean resume = sessionId != null && resumeUrl != null;
            Future<String> url = resume ? Future.succeededFuture(resumeUrl) : api.gatewayUrl(bot.id(), bot.apiUrl(), bot.token());
            url.compose(this::open).onComplete(opened -> {
                if (opened.failed()) {
                    retry("cannot connect: " + opened.cause().getMessage());
                    return;
                }
                if (closed || socket != null) {
                    opened.result().close(KEEP_SESSION, closed ? "let go" : "one connection at a time");
                    return;
                }
                socket = opened.result();
                socket.textMessageHandler(text -> {
                    JsonObject frame;
                    try {
                        frame = new JsonObject(text);
                    } catch (RuntimeException e) {
                        LOG.warn("discord sent a frame that is not JSON [bot: {}]", bot.name());
                        return;
                    }
                    frame(frame);
                });
                socket.closeHandler(v -> closedBy(socket.closeStatusCode() == null ? -1 : socket.closeStatusCode()));
                socket.exceptionHandler(e -> LOG.debug("discord connection failed [bot: {}]: {}", bot.name(), e.toString()));
            });
        }

        Future<WebSocket> open(String base) {
            URI uri = URI.create(base + (base.contains("?") ? "&" : "?") + "v=10&encoding=json");
            return egress.address(uri.getHost()).compose(address -> client.connect(new WebSocketConnectOptions()
                    .setAbsoluteURI(uri.toString())));
        }

        void frame(JsonObject frame) {
            int op = frame.getInteger("op", -1);
            switch (op) {
                case 10 -> hello(frame.getJsonObject("d", new JsonObject()).getLong("heartbeat_interval", 41_250L));
                case 11 -> acked = true;
                case 1 -> heartbeat();
                case 7 -> reconnect("Discord asked to reconnect");
                case 9 -> {
                    if (!Boolean.TRUE.equals(frame.getValue("d"))) {
                        sessionId = null;
                        resumeUrl = null;
                        taken = 0;
                        received = 0;
                    }
                    vertx.setTimer(1_000 + ThreadLocalRandom.current().nextLong(4_000), id -> reconnect("invalid session"));
                }
                case 0 -> dispatch(frame);
                default -> { }
            }
        }

        void hello(long interval) {
            acked = true;
            vertx.cancelTimer(heartbeatTimer);
            heartbeatTimer = vertx.setPeriodic(Math.max(1, (long) (interval * ThreadLocalRandom.current().nextDouble(0.1, 1.0))),
                    interval, id -> {
                        if (!acked) {
                            reconnect("no heartbeat ack");
                            return;
                        }
                        heartbeat();
                    });
            JsonObject identity;
            if (sessionId != null && resumeUrl != null) {
                identity = new JsonObject().put("op", 6).put("d", new JsonObject().put("token", bot.token())
                        .put("session_id", sessionId).put("seq", taken));
                metrics.increment("clawfleet.discord.connects", "kind", "resume", "tenant", bot.tenantId());
            } else {
                identity = new JsonObject().put("op", 2).put("d", new JsonObject().put("token", bot.token())
                        .put("intents", INTENTS).put("properties", new JsonObject().put("os", "linux")
                                .put("browser", "clawfleet").put("device", "clawfleet")));
                metrics.increment("clawfleet.discord.connects", "kind", "identify", "tenant", bot.tenantId());
            }
            send(identity);
        }

        void heartbeat() {
            acked = false;
            send(new JsonObject().put("op", 1).put("d", received == 0 ? null : received));
        }

        void dispatch(JsonObject frame) {
            long seq = frame.getLong("s", 0L);
            received = Math.max(received, seq);
            String type = frame.getString("t", "");
            JsonObject data = frame.getValue("d") instanceof JsonObject d ? d : new JsonObject();
            if ("READY".equals(type)) {
                sessionId = data.getString("session_id");
                resumeUrl = data.getString("resume_gateway_url");
                taken = seq;
                failures = 0;
                LOG.info("discord bot ready [bot: {}, tenant: {}, node: {}]", bot.name(), bot.tenantId(), nodeId);
                hold();
                return;
            }
            if ("RESUMED".equals(type)) {
                failures = 0;
                LOG.info("discord session resumed [bot: {}, tenant: {}, node: {}, after: {}]", bot.name(), bot.tenantId(), nodeId, taken);
                return;
            }
            // In order, one at a time: the sequence moves past an event only once it is taken.
            chain = chain.compose(v -> "MESSAGE_CREATE".equals(type) ? take(data, 0) : Future.<Void>succeededFuture())
                    .onSuccess(v -> taken = Math.max(taken, seq))
                    .recover(e -> {
                        LOG.warn("a discord event was not taken; the connection is resumed from the last one taken [bot: {}]: {}",
                                bot.name(), e.getMessage());
                        reconnect("event not taken");
                        return Future.succeededFuture();
                    });
        }

        /** Takes a message, waiting out a refusal that says when to come back (a rate, a backlog), up to three times. */
        Future<Void> take(JsonObject message, int tries) {
            return events.accept(bot, message).recover(failure -> {
                if (failure instanceof ApiException refused && refused.retryAfterSeconds() > 0 && tries < 3 && !closed) {
                    Promise<Void> later = Promise.promise();
                    vertx.setTimer(refused.retryAfterSeconds() * 1000, id -> later.complete());
                    return later.future().compose(v -> take(message, tries + 1));
                }
                return Future.failedFuture(failure);
            });
        }

        void send(JsonObject payload) {
            if (socket != null && !socket.isClosed()) {
                socket.writeTextMessage(payload.encode());
            }
        }

        /** Closes the connection keeping the session resumable, and opens another that resumes it. */
        void reconnect(String why) {
            LOG.info("discord connection closed to resume [bot: {}]: {}", bot.name(), why);
            vertx.cancelTimer(heartbeatTimer);
            WebSocket current = socket;
            socket = null;
            if (current != null) {
                current.closeHandler(null);
                current.close(KEEP_SESSION, why.length() > 100 ? why.substring(0, 100) : why);
            }
            // events still being taken finish first: the resume starts after the last one taken
            chain.onComplete(v -> vertx.setTimer(backoff(), id -> connect()));
        }

        void closedBy(int code) {
            vertx.cancelTimer(heartbeatTimer);
            socket = null;
            if (closed || stopped) {
                return;
            }
            if (FATAL.contains(code)) {
                LOG.error("discord refused the bot's connection for good (close code {}: a bad token or intents not enabled "
                        + "in the developer portal); not retried until the lease moves [bot: {}, tenant: {}]", code, bot.name(),
                        bot.tenantId());
                metrics.increment("clawfleet.discord.refused", "code", Integer.toString(code), "tenant", bot.tenantId());
                // Held, not retried, for 5 minutes (identifying again and again could get the bot's token reset); then
                // let go, so the next claim reads the account afresh (a new token registered meanwhile).
                vertx.setTimer(300_000, id -> {
                    sessions.remove(bot.id(), this);
                    close();
                });
                return;
            }
            if (code == 4007 || code == 4009) {
                sessionId = null; // invalid seq, session timed out: identify afresh
                resumeUrl = null;
            }
            retry("closed by Discord (" + code + ")");
        }

        void retry(String why) {
            failures++;
            long delay = backoff();
            LOG.warn("discord connection lost, again in {} ms [bot: {}]: {}", delay, bot.name(), why);
            vertx.setTimer(delay, id -> connect());
        }

        long backoff() {
            return failures == 0 ? 500 : Math.min(MAX_BACKOFF_MS, 500L << Math.min(failures, 6));
        }

        /** Lets go: records where the session stands (for the next holder) and closes the socket keeping the session. */
        Future<Void> close() {
            Future<Void> recorded = hold();
            closed = true;
            vertx.cancelTimer(heartbeatTimer);
            vertx.cancelTimer(leaseTimer);
            if (socket != null) {
                socket.closeHandler(null);
                socket.close(KEEP_SESSION, "handing over");
            }
            return recorded;
        }
    }
}
