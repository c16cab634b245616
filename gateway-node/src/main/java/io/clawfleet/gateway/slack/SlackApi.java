package io.clawfleet.gateway.slack;

import io.clawfleet.gateway.delivery.DeliveryException;
import io.clawfleet.gateway.delivery.PlatformHttp;
import io.clawfleet.shared.store.ChannelBot;
import io.vertx.core.Future;
import io.vertx.core.MultiMap;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Objects;
import java.util.Set;

/**
 * The Slack Web API methods Clawfleet uses ({@code auth.test}, {@code chat.postMessage}). The bot token goes in the
 * {@code Authorization} header, never in an error message. Slack answers most errors with HTTP 200 and
 * {@code {"ok": false, "error": "..."}}; a rate limit with HTTP 429 and {@code Retry-After} in seconds. Failures are
 * {@link DeliveryException}s that say whether a retry may help.
 */
public final class SlackApi {

    /** Where Slack's Web API is, unless an account names another (an emulator, a proxy). */
    public static final String DEFAULT_API_URL = "https://slack.com/api";
    /**
     * The longest text Clawfleet puts in one Slack message. Slack truncates a message's text past 40,000 characters and
     * advises keeping it under 4,000: longer replies go out in parts of at most this.
     */
    public static final int MAX_TEXT = 4000;
    /** Errors a later try may get past; every other error of Slack's is an answer that will not change. */
    private static final Set<String> TRANSIENT = Set.of("ratelimited", "internal_error", "fatal_error", "service_unavailable",
            "request_timeout");

    private final PlatformHttp http;

    public SlackApi(PlatformHttp http) {
        this.http = Objects.requireNonNull(http);
    }

    /** Who the token is: {@code user_id} (the app's bot user), {@code user}, {@code team_id}, {@code team}. */
    public Future<JsonObject> authTest(String apiUrl, String token) {
        return call(apiUrl, token, "auth.test", new JsonObject(), 15_000);
    }

    /**
     * Posts a message in a conversation, in a thread when {@code threadTs} is given, as Slack {@code mrkdwn}.
     */
    public Future<Void> postMessage(String apiUrl, String token, String channel, String threadTs, String text) {
        JsonObject params = new JsonObject().put("channel", channel).put("text", text).put("mrkdwn", true);
        if (threadTs != null) {
            params.put("thread_ts", threadTs);
        }
        return call(apiUrl, token, "chat.postMessage", params, 30_000).mapEmpty();
    }

    /** A notice of Clawfleet's own to a chat ({@link io.clawfleet.gateway.delivery.ChannelNotices}), as plain text. */
    public Future<Void> notice(ChannelBot bot, String chatId, String text) {
        SlackChat chat = SlackChat.ofChatId(bot.id(), chatId);
        return postMessage(bot.apiUrl(), bot.token(), chat.conversation(), chat.threadTs(), SlackMarkdown.escape(text));
    }

    private Future<JsonObject> call(String apiUrl, String token, String method, JsonObject params, long timeoutMs) {
        URI uri;
        try {
            uri = new URI(apiUrl + "/" + method);
        } catch (URISyntaxException e) {
            return Future.failedFuture(new DeliveryException("Slack " + method + " failed: the API URL is not a valid URL", false, -1));
        }
        MultiMap headers = MultiMap.caseInsensitiveMultiMap()
                .add("content-type", "application/json; charset=utf-8")
                .add("authorization", "Bearer " + token);
        return http.post("Slack " + method, uri, headers, Buffer.buffer(params.encode()), timeoutMs).map(reply -> {
            if (reply.status() == 429) {
                throw new DeliveryException("Slack " + method + " failed: 429 rate limited", true, retryAfterMs(reply.headers()));
            }
            JsonObject json;
            try {
                json = reply.body().toJsonObject();
            } catch (RuntimeException e) {
                json = null;
            }
            if (json == null) {
                throw new DeliveryException("Slack " + method + " answered " + reply.status() + " with a body that is not JSON",
                        reply.status() >= 500, -1);
            }
            if (json.getBoolean("ok", false)) {
                return json;
            }
            String error = json.getString("error", "HTTP " + reply.status());
            throw new DeliveryException("Slack " + method + " failed: " + error, reply.status() >= 500 || TRANSIENT.contains(error),
                    retryAfterMs(reply.headers()));
        });
    }

    /** Slack's {@code Retry-After}, in seconds, as milliseconds; -1 when there is none. */
    static long retryAfterMs(MultiMap headers) {
        String value = headers.get("retry-after");
        if (value == null) {
            return -1;
        }
        try {
            return Math.max(0, Long.parseLong(value.strip())) * 1000;
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
