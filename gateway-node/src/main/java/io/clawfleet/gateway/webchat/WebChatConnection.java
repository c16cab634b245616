package io.clawfleet.gateway.webchat;

import io.clawfleet.gateway.admission.TokenQuotas;
import io.clawfleet.gateway.reply.ReplyHub;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.store.ChannelBot;
import io.clawfleet.shared.store.WebChatStore;
import io.vertx.core.Future;
import io.vertx.core.http.ServerWebSocket;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Instant;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * One end user's web chat connection. The protocol, JSON text frames:
 * <pre>
 * client: {"type":"hello","token":"...","after":R?,"afterUser":U?}   first, within 10 s
 * server: {"type":"ready","userId":"..."} then {"type":"history","messages":[...]}
 * client: {"type":"message","id":"&lt;its own id&gt;","text":"..."}
 * server: {"type":"ack","id":"...","seq":U,"duplicate":false}        once the message is durable
 * server: {"type":"delta","replyTo":"...","text":"..."}              streamed pieces of the reply (best effort)
 * server: {"type":"message","role":"assistant","seq":R,"text":"...","replyTo":"...","at":"..."}   the reply
 * server: {"type":"error","code":"...","message":"...","id":"..."?,"retryAfter":s?}
 * client: {"type":"ping"}  server: {"type":"pong"}
 * </pre>
 * A history entry is a message frame of either role ({@code user} entries carry {@code id}, the client's own id).
 * {@code after} is the highest reply seq the client has, {@code afterUser} the highest of its own messages: a client
 * reconnecting (to any gateway, after a drop or a gateway's death) sends both and gets only what it has not seen; without
 * them it gets the chat's latest {@value #HISTORY} entries. A message is keyed by its client id, so sending it again
 * after a reconnect (its ack lost) is one message and one reply. The next reply, answering a message of this connection,
 * is sent from its notice where notices are authentic (SECURITY.md rule 5: a node alone, or bus certificates); the
 * notice is the outbox row. Anything else is read from the outbox: a reply notice (or, while a message waits, a read
 * every {@value #WAITING_READ_MS} ms; otherwise every {@value #IDLE_READ_MS} ms, for replies to scheduled tasks whose
 * notice was lost) makes the connection read what is new.
 */
final class WebChatConnection {

    private static final Logger LOG = LoggerFactory.getLogger(WebChatConnection.class);
    static final int HISTORY = 100;
    static final int MAX_TEXT = 16_000;
    static final long HELLO_MS = 10_000;
    static final long WAITING_READ_MS = 2_000;
    static final long IDLE_READ_MS = 30_000;
    /** A message with no reply after this long stops the fast reads (the reply still comes, by notice or idle read). */
    static final long WAITING_GIVE_UP_MS = 600_000;
    static final short UNAUTHORIZED = 4401;
    static final short HELLO_TIMEOUT = 4408;
    private static final Pattern CLIENT_ID = Pattern.compile("[A-Za-z0-9_-]{1,64}");

    private record Waiting(long inboxId, long since) {
    }

    private final WebChat chat;
    private final ServerWebSocket socket;
    private final ChannelBot account;
    private final String publishableKey;
    /** Messages this connection sent and awaits the replies to, by client id. */
    private final Map<String, Waiting> waiting = new LinkedHashMap<>();
    private String userId;
    private String chatKey;
    private String chatRef;
    private ReplyHub.Waiter<OutboundReply> chatWaiter;
    private long lastReply;
    private long lastRead = System.nanoTime();
    private boolean reading;
    private boolean readAgain;
    private boolean closed;
    private long timer = -1;

    WebChatConnection(WebChat chat, ServerWebSocket socket, ChannelBot account, String publishableKey) {
        this.chat = chat;
        this.socket = socket;
        this.account = account;
        this.publishableKey = publishableKey;
    }

    void start() {
        long hello = chat.vertx().setTimer(HELLO_MS, id -> {
            if (userId == null && !closed) {
                socket.close(HELLO_TIMEOUT, "no hello");
            }
        });
        socket.textMessageHandler(this::frame);
        socket.binaryMessageHandler(b -> error("unsupported", "frames are JSON text", null));
        socket.exceptionHandler(e -> LOG.debug("web chat connection failed [channel: {}]: {}", account.id(), e.toString()));
        socket.closeHandler(v -> {
            closed = true;
            chat.vertx().cancelTimer(hello);
            chat.vertx().cancelTimer(timer);
            if (chatWaiter != null) {
                chat.hub().cancelChat(chatRef, chatWaiter);
            }
            waiting.values().forEach(w -> chat.hub().cancelMessage(w.inboxId()));
            waiting.clear();
        });
    }

    private void frame(String text) {
        JsonObject frame;
        try {
            frame = new JsonObject(text);
        } catch (RuntimeException e) {
            error("bad_frame", "frames are JSON objects with a \"type\"", null);
            return;
        }
        Object type = frame.getValue("type");
        if ("ping".equals(type)) {
            send(new JsonObject().put("type", "pong"));
        } else if (userId == null) {
            if ("hello".equals(type)) {
                hello(frame);
            } else {
                error("hello_first", "the first frame is {\"type\":\"hello\",\"token\":\"...\"}", null);
            }
        } else if ("message".equals(type)) {
            message(frame);
        } else if (!"hello".equals(type)) {
            error("bad_frame", "unknown frame type; expected message or ping", null);
        }
    }

    private void hello(JsonObject frame) {
        Optional<EndUserTokens.EndUser> user = frame.getValue("token") instanceof String token
                ? EndUserTokens.verify(account.signingSecret(), publishableKey, token, Instant.now().getEpochSecond())
                : Optional.empty();
        if (user.isEmpty()) {
            chat.metrics().increment("clawfleet.webchat.refused", "reason", "token");
            socket.close(UNAUTHORIZED, "token not valid");
            return;
        }
        long after = nonNegative(frame.getValue("after"));
        long afterUser = nonNegative(frame.getValue("afterUser"));
        userId = user.get().id();
        chatKey = account.id() + ":" + userId;
        chatRef = ReplyHub.chatRef(account.owner(), Channels.WEBCHAT, chatKey);
        chatWaiter = chat.hub().onChatReply(chatRef, this::replied);
        chat.metrics().increment("clawfleet.webchat.connected", "tenant", account.tenantId(), "bot", account.botId());
        send(new JsonObject().put("type", "ready").put("userId", userId));
        lastReply = after;
        chat.history().history(account.owner(), Channels.WEBCHAT, chatKey, afterUser, after, HISTORY).onComplete(read -> {
            if (closed) {
                return; // gone meanwhile: no timer for a closed connection
            }
            if (read.failed()) {
                LOG.warn("web chat history cannot be read [tenant: {}, channel: {}]: {}", account.tenantId(), account.id(),
                        read.cause().toString());
                error("unavailable", "the chat's history cannot be read now; reconnect", null);
                socket.close();
                return;
            }
            JsonArray messages = new JsonArray();
            for (WebChatStore.Entry entry : read.result()) {
                messages.add(entry(entry));
                if (entry.role().equals("assistant")) {
                    lastReply = Math.max(lastReply, entry.seq());
                }
            }
            send(new JsonObject().put("type", "history").put("messages", messages));
            lastRead = System.nanoTime();
            timer = chat.vertx().setPeriodic(WAITING_READ_MS, id -> backstop());
        });
    }

    private void message(JsonObject frame) {
        String id = frame.getValue("id") instanceof String i && CLIENT_ID.matcher(i).matches() ? i : null;
        String text = frame.getValue("text") instanceof String t && !t.isBlank() ? t : null;
        if (id == null || text == null) {
            error("bad_message", "a message is {\"type\":\"message\",\"id\": 1 to 64 of letters, digits, _ and -, \"text\": not "
                    + "blank}", id);
            return;
        }
        if (text.length() > MAX_TEXT) {
            error("too_long", "a message is at most " + MAX_TEXT + " characters", id);
            return;
        }
        chat.quotas().check(account.tenantId())
                .recover(unread -> Future.succeededFuture(null)) // a soft limit: an unread quota lets it through
                .compose(over -> over != null
                        ? Future.failedFuture(TokenQuotas.refusal(over, Instant.now()))
                        : chat.ingest().accept(account.owner(), Channels.WEBCHAT, chatKey, WebChatStore.CLIENT_PREFIX + id, userId,
                                text, chat.nodeId()))
                .onComplete(accepted -> {
                    if (closed) {
                        return;
                    }
                    if (accepted.failed()) {
                        ApiException refused = accepted.cause() instanceof ApiException api ? api
                                : ApiException.unavailable("the message was not taken; send it again", accepted.cause(), 1);
                        JsonObject error = new JsonObject().put("type", "error").put("code", refused.code())
                                .put("message", refused.getMessage()).put("id", id);
                        if (refused.retryAfterSeconds() > 0) {
                            error.put("retryAfter", refused.retryAfterSeconds());
                        }
                        send(error);
                        return;
                    }
                    long inboxId = accepted.result().message().id();
                    chat.metrics().increment("clawfleet.webchat.messages", "tenant", account.tenantId(), "bot", account.botId());
                    send(new JsonObject().put("type", "ack").put("id", id).put("seq", accepted.result().message().seq())
                            .put("duplicate", !accepted.result().created()));
                    waiting.put(id, new Waiting(inboxId, System.nanoTime()));
                    chat.hub().onMessageReply(inboxId, this::replied, piece -> {
                        if (!closed && !socket.writeQueueFull()) {
                            send(new JsonObject().put("type", "delta").put("replyTo", id).put("text", piece.delta()));
                        }
                    });
                    // Already answered (a message sent again after its reply): the read finds it.
                    readReplies();
                });
    }

    private void backstop() {
        long now = System.nanoTime();
        waiting.values().removeIf(w -> {
            boolean givenUp = now - w.since() > TimeUnit.MILLISECONDS.toNanos(WAITING_GIVE_UP_MS);
            if (givenUp) {
                chat.hub().cancelMessage(w.inboxId());
            }
            return givenUp;
        });
        if (!waiting.isEmpty() || now - lastRead > TimeUnit.MILLISECONDS.toNanos(IDLE_READ_MS)) {
            readReplies();
        }
    }

    /**
     * A reply notice for this chat or for a message of this connection. Where notices are authentic (SECURITY.md rule 5)
     * and this one is the chat's next reply, answering a message this connection awaits, it is the outbox row field for
     * field and is sent as it is, without a read. Any other notice newer than the last reply sent makes the connection
     * read: a reply to a message of another connection or to a scheduled task, one after a gap, or any notice on a
     * cluster without bus certificates.
     */
    private void replied(OutboundReply reply) {
        if (closed || userId == null || reply.seq() <= lastReply) {
            return;
        }
        Map.Entry<String, Waiting> answered = reply.seq() == lastReply + 1 && chat.hub().noticesAreAuthentic()
                && reply.bot().equals(account.owner()) && reply.channel().equals(Channels.WEBCHAT)
                && reply.chatKey().equals(chatKey) ? awaiting(reply.inReplyTo()) : null;
        if (answered == null) {
            readReplies();
            return;
        }
        lastReply = reply.seq();
        send(entry(new WebChatStore.Entry("assistant", reply.seq(), reply.text(), answered.getKey(),
                reply.at().atOffset(ZoneOffset.UTC))));
        chat.metrics().increment("clawfleet.webchat.replies", "tenant", account.tenantId(), "bot", account.botId());
        chat.hub().servedFromNotice(reply);
        waiting.remove(answered.getKey());
        chat.hub().cancelMessage(answered.getValue().inboxId());
    }

    /** The message of this connection with that inbox id that awaits its reply, with its client id; null if none. */
    private Map.Entry<String, Waiting> awaiting(long inboxId) {
        for (Map.Entry<String, Waiting> entry : waiting.entrySet()) {
            if (entry.getValue().inboxId() == inboxId) {
                return entry;
            }
        }
        return null;
    }

    /** Sends the replies newer than the last one sent; one read at a time, another after it when asked meanwhile. */
    private void readReplies() {
        if (closed || userId == null) {
            return;
        }
        if (reading) {
            readAgain = true;
            return;
        }
        reading = true;
        lastRead = System.nanoTime();
        chat.history().history(account.owner(), Channels.WEBCHAT, chatKey, Long.MAX_VALUE, lastReply, HISTORY).onComplete(read -> {
            reading = false;
            if (read.succeeded() && !closed) {
                for (WebChatStore.Entry entry : read.result()) {
                    if (entry.seq() <= lastReply) {
                        continue;
                    }
                    lastReply = entry.seq();
                    send(entry(entry));
                    chat.metrics().increment("clawfleet.webchat.replies", "tenant", account.tenantId(), "bot", account.botId());
                    if (entry.clientId() != null) {
                        Waiting answered = waiting.remove(entry.clientId());
                        if (answered != null) {
                            chat.hub().cancelMessage(answered.inboxId());
                        }
                    }
                }
            }
            if (readAgain) {
                readAgain = false;
                readReplies();
            }
        });
    }

    private static JsonObject entry(WebChatStore.Entry entry) {
        JsonObject json = new JsonObject().put("type", "message").put("role", entry.role()).put("seq", entry.seq())
                .put("text", entry.text()).put("at", entry.at() == null ? null : entry.at().toInstant().toString());
        return entry.role().equals("user") ? json.put("id", entry.clientId()) : json.put("replyTo", entry.clientId());
    }

    private void error(String code, String message, String id) {
        JsonObject error = new JsonObject().put("type", "error").put("code", code).put("message", message);
        send(id == null ? error : error.put("id", id));
    }

    private void send(JsonObject frame) {
        if (!closed) {
            socket.writeTextMessage(frame.encode());
        }
    }

    private static long nonNegative(Object value) {
        return value instanceof Number n && n.longValue() > 0 ? n.longValue() : 0;
    }
}
