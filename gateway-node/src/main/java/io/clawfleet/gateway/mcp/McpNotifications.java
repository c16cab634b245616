package io.clawfleet.gateway.mcp;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.Consumers;
import io.clawfleet.shared.message.WorkspaceChanged;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.McpSessionStore;
import io.clawfleet.shared.workspace.WorkspacePaths;
import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.MessageConsumer;
import io.vertx.core.json.JsonObject;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

/**
 * The sessions' notification streams (GET) open on this gateway. A change to a bot's workspace reaches every gateway
 * (the bus notice); each tells the streams of that bot: {@code resources/list_changed}, {@code prompts/list_changed}
 * when a skill changed, and {@code resources/updated} to a session subscribed to the file (its subscriptions are read
 * from the database, where any gateway may have changed them). Notices are best effort and carry no content: a client
 * told reads again. A stream that reconnects is told both lists changed, so a notice missed in between costs a re-read,
 * never a stale view.
 */
final class McpNotifications {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(McpNotifications.class);

    private record Listener(Context context, Sse sse, String sessionHash, AtomicInteger events) {
    }

    private final Vertx vertx;
    private final McpSessionStore sessions;
    private final int maxStreams;
    private final Map<String, Set<Listener>> byBot = new ConcurrentHashMap<>();
    private final AtomicInteger open = new AtomicInteger();
    private MessageConsumer<WorkspaceChanged> consumer;

    McpNotifications(Vertx vertx, McpSessionStore sessions, int maxStreams) {
        this.vertx = Objects.requireNonNull(vertx);
        this.sessions = Objects.requireNonNull(sessions);
        this.maxStreams = maxStreams;
    }

    Future<Void> start() {
        return Consumers.register(vertx, Addresses.WORKSPACE_CHANGED,
                        (io.vertx.core.eventbus.Message<WorkspaceChanged> message) -> changed(message.body()))
                .onSuccess(c -> consumer = c).mapEmpty();
    }

    Future<Void> stop() {
        return consumer == null ? Future.succeededFuture() : consumer.unregister();
    }

    boolean full() {
        return open.get() >= maxStreams;
    }

    int open() {
        return open.get();
    }

    /** Opens a session's notification stream; {@code resumed} when the client reconnects one it had. */
    void open(Sse sse, McpSessionStore.Session session, boolean resumed) {
        Listener listener = new Listener(vertx.getOrCreateContext(), sse, session.hash(), new AtomicInteger());
        String key = key(session.bot());
        byBot.computeIfAbsent(key, k -> ConcurrentHashMap.newKeySet()).add(listener);
        open.incrementAndGet();
        sse.onClose(() -> byBot.computeIfPresent(key, (k, set) -> {
            if (set.remove(listener)) {
                open.decrementAndGet();
            }
            return set.isEmpty() ? null : set;
        }));
        sse.prime("n:" + listener.events().get());
        if (resumed) {
            send(listener, JsonRpc.notification("notifications/resources/list_changed", null));
            send(listener, JsonRpc.notification("notifications/prompts/list_changed", null));
        }
    }

    private void changed(WorkspaceChanged change) {
        Set<Listener> listeners = byBot.get(key(new BotRef(change.tenantId(), change.botId())));
        if (listeners == null || change.path() == null || !BotMcp.offered(change.path())) {
            return;
        }
        BotRef bot = new BotRef(change.tenantId(), change.botId());
        String uri = BotMcp.uri(bot, change.path());
        boolean skill = WorkspacePaths.isSkillFile(change.path());
        List<Listener> streams = List.copyOf(listeners);
        for (Listener listener : streams) {
            listener.context().runOnContext(v -> {
                send(listener, JsonRpc.notification("notifications/resources/list_changed", null));
                if (skill) {
                    send(listener, JsonRpc.notification("notifications/prompts/list_changed", null));
                }
            });
        }
        // whom the file's change concerns: one read for all of this bot's streams here
        sessions.subscribedTo(streams.stream().map(Listener::sessionHash).collect(Collectors.toSet()), uri).onComplete(subscribed -> {
            if (subscribed.failed()) {
                LOG.warn("MCP sessions' subscriptions could not be read; they are not told of a change [bot: {}/{}]: {}",
                        bot.tenantId(), bot.botId(), subscribed.cause().getMessage());
                return;
            }
            for (Listener listener : streams) {
                if (subscribed.result().contains(listener.sessionHash())) {
                    listener.context().runOnContext(v -> send(listener, JsonRpc.notification("notifications/resources/updated",
                            new JsonObject().put("uri", uri))));
                }
            }
        });
    }

    private static void send(Listener listener, JsonObject notification) {
        listener.sse().send("n:" + listener.events().incrementAndGet(), notification);
    }

    private static String key(BotRef bot) {
        return bot.tenantId() + '\u0000' + bot.botId();
    }
}
