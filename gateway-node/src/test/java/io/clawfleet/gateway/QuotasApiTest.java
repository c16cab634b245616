package io.clawfleet.gateway;

import io.clawfleet.gateway.TestGateway.Tenant;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.DeferredStore;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.testkit.FakeTelegram;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Token quotas on a real gateway (issue 14): over {@code tokensPerDay} or {@code tokensPerMonth}, an HTTP message gets
 * 429 {@code insufficient_quota} with Retry-After and the RateLimit headers (OpenAI-shaped on /v1), a Telegram
 * message is kept aside with one notice per chat, and once the limit allows it the tenant replays what was kept, in
 * order, exactly once; a raised limit applies at once.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class QuotasApiTest {

    private static final String OPERATOR = "operator-key-quotas-0123456789abcd";
    private static final AtomicInteger TENANTS = new AtomicInteger();

    private TestGateway gateway;
    private GatewayClient client;
    private FakeTelegram telegram;

    @BeforeAll
    void start() {
        gateway = TestGateway.start(Map.of("nodeId", "gw-quotas", "operatorKey", OPERATOR,
                "egress.allowedHosts", "127.0.0.1", "telegram.quotaNotice", "Out of quota, saved for later."));
        client = gateway.client();
        telegram = new FakeTelegram(gateway.vertx());
    }

    @AfterAll
    void stop() {
        gateway.stop();
    }

    private Tenant tenant(JsonObject limits) throws Exception {
        String id = "quota-" + TENANTS.incrementAndGet();
        return gateway.tenant(id, id, limits);
    }

    /** Tokens the tenant's turns used at {@code at}, as a turn's commit records them. */
    private void used(String tenantId, int tokens, Instant at) {
        result(gateway.pool().preparedQuery("""
                        WITH c AS (INSERT INTO chats (tenant_id, channel, chat_key, partition) VALUES ($1, 'api', $4, 0)
                                   ON CONFLICT (tenant_id, bot_id, channel, chat_key) DO UPDATE SET chat_key = EXCLUDED.chat_key
                                   RETURNING id)
                        INSERT INTO llm_usage (tenant_id, chat_id, model, input_tokens, output_tokens, created_at)
                        SELECT $1, c.id, 'm', $2, 0, $3 FROM c""")
                .execute(Tuple.of(tenantId, tokens, at.atOffset(ZoneOffset.UTC), "used-" + at.toEpochMilli())));
    }

    private HttpResponse<String> message(Tenant t, String chat, String id) throws Exception {
        return client.call("POST", "/api/v1/messages", t.key(), new JsonObject().put("chatId", chat).put("senderId", "u")
                .put("messageId", id).put("text", "hello"));
    }

    @Test
    void overItsDailyTokensATenantsHttpMessagesGet429InsufficientQuotaUntilTheLimitIsRaised() throws Exception {
        Tenant t = tenant(new JsonObject().put("tokensPerDay", 100));
        assertThat(message(t, "c1", "m1").statusCode()).isEqualTo(202);
        // yesterday's tokens do not count toward today's limit
        used(t.id(), 1_000, Instant.now().minus(Duration.ofDays(1)).atOffset(ZoneOffset.UTC).toLocalDate()
                .atTime(12, 0).toInstant(ZoneOffset.UTC));
        used(t.id(), 60, Instant.now());
        used(t.id(), 40, Instant.now());
        // the gateway's view is a few seconds old at most
        Await.until("the quota to be seen", Duration.ofSeconds(15), () -> {
            try {
                return message(t, "c-" + System.nanoTime(), "m").statusCode() == 429;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });

        HttpResponse<String> refused = message(t, "c2", "m2");
        assertThat(refused.statusCode()).isEqualTo(429);
        JsonObject error = new JsonObject(refused.body()).getJsonObject("error");
        assertThat(error.getString("code")).isEqualTo("insufficient_quota");
        assertThat(error.getString("message")).contains("tokensPerDay").contains("100");
        long untilMidnight = LocalDate.now(ZoneOffset.UTC).plusDays(1).atStartOfDay().toEpochSecond(ZoneOffset.UTC)
                - Instant.now().getEpochSecond();
        assertThat(Long.parseLong(refused.headers().firstValue("retry-after").orElseThrow())).isBetween(untilMidnight - 5, untilMidnight + 5);
        assertThat(refused.headers().firstValue("ratelimit-policy").orElseThrow()).isEqualTo("\"tokens-day\";q=100;w=86400");
        assertThat(refused.headers().firstValue("ratelimit").orElseThrow()).startsWith("\"tokens-day\";r=0;t=");
        HttpResponse<String> openAi = client.call("POST", "/v1/chat/completions", t.key(), new JsonObject().put("model", "default")
                .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "hi"))));
        assertThat(openAi.statusCode()).isEqualTo(429);
        assertThat(new JsonObject(openAi.body()).getJsonObject("error").getString("type")).isEqualTo("insufficient_quota");

        // when the operator raises the limit, the next message is accepted (every gateway forgets at once)
        assertThat(client.call("PATCH", "/admin/v1/tenants/" + t.id(), OPERATOR,
                new JsonObject().put("limits", new JsonObject().put("tokensPerDay", 10_000))).statusCode()).isEqualTo(200);
        assertThat(message(t, "c3", "m3").statusCode()).isEqualTo(202);
    }

    @Test
    void aMonthlyLimitCountsTheWholeUtcMonthAndNamesItsReset() throws Exception {
        Tenant t = tenant(new JsonObject().put("tokensPerMonth", 500));
        LocalDate today = LocalDate.now(ZoneOffset.UTC);
        used(t.id(), 400, today.withDayOfMonth(1).atStartOfDay().toInstant(ZoneOffset.UTC));
        used(t.id(), 10_000, today.withDayOfMonth(1).atStartOfDay().minusSeconds(1).toInstant(ZoneOffset.UTC)); // last month
        assertThat(message(t, "c1", "m1").statusCode()).isEqualTo(202);
        used(t.id(), 100, Instant.now());
        result(gateway.pool().query("SELECT 1").execute());
        // a change of the tenant makes every gateway read it again
        client.call("PATCH", "/admin/v1/tenants/" + t.id(), OPERATOR, new JsonObject().put("name", "renamed"));
        HttpResponse<String> refused = message(t, "c1", "m2");
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(429);
        assertThat(refused.headers().firstValue("ratelimit-policy").orElseThrow()).isEqualTo("\"tokens-month\";q=500;w=2592000");
        assertThat(refused.body()).contains(today.withDayOfMonth(1).plusMonths(1).toString());
    }

    @Test
    void overQuotaTelegramMessagesAreKeptWithOneNoticeAndReplayedInOrderOnce() throws Exception {
        Tenant t = tenant(new JsonObject().put("tokensPerDay", 10));
        HttpResponse<String> registered = client.call("POST", "/api/v1/channels/telegram", t.key(),
                new JsonObject().put("token", FakeTelegram.TOKEN).put("apiUrl", telegram.url()));
        assertThat(registered.statusCode()).as(registered.body()).isEqualTo(201);
        used(t.id(), 50, Instant.now());
        client.call("PATCH", "/admin/v1/tenants/" + t.id(), OPERATOR, new JsonObject().put("name", "over"));

        // when a chat writes three times while its tenant is over quota
        for (String text : List.of("one", "two", "three")) {
            telegram.userSays(4242, text);
        }
        Await.until("three deferred messages", Duration.ofSeconds(20), () -> count("deferred_messages", t.id()) == 3);

        // then none reached the inbox, the chat was told once, and the tenant sees them
        assertThat(count("inbox", t.id())).isZero();
        Await.until("the notice", Duration.ofSeconds(10), () -> !telegram.sentTo(4242).isEmpty());
        assertThat(telegram.sentTo(4242)).containsExactly("Out of quota, saved for later.");
        JsonObject listed = new JsonObject(client.call("GET", "/api/v1/deferred", t.key(), null).body());
        assertThat(listed.getLong("total")).isEqualTo(3L);
        assertThat(listed.getJsonArray("deferred").getJsonObject(0).getString("reason")).isEqualTo("tokensPerDay");
        // a replay while still over quota is refused and keeps them
        HttpResponse<String> early = client.call("POST", "/api/v1/deferred/replay", t.key(), new JsonObject());
        assertThat(early.statusCode()).isEqualTo(429);
        assertThat(count("deferred_messages", t.id())).isEqualTo(3);

        // when the limit allows it, a replay puts them into the inbox in the order they came, once
        client.call("PATCH", "/admin/v1/tenants/" + t.id(), OPERATOR, new JsonObject().put("limits", new JsonObject().putNull("tokensPerDay")));
        JsonObject replayed = new JsonObject(client.call("POST", "/api/v1/deferred/replay", t.key(), new JsonObject()).body());
        assertThat(replayed.getInteger("replayed")).isEqualTo(3);
        assertThat(replayed.getLong("remaining")).isZero();
        assertThat(new JsonObject(client.call("POST", "/api/v1/deferred/replay", t.key(), new JsonObject()).body())
                .getInteger("replayed")).isZero();
        List<String> texts = new java.util.ArrayList<>();
        result(gateway.pool().preparedQuery("SELECT text FROM inbox WHERE tenant_id = $1 ORDER BY seq").execute(Tuple.of(t.id())))
                .forEach(row -> texts.add(row.getString(0)));
        assertThat(texts).containsExactly("one", "two", "three");
        assertThat(telegram.sentTo(4242)).hasSize(1);
    }

    @Test
    void deferredMessagesExpireAfterSevenDays() {
        String tenantId = "quota-expiry";
        result(gateway.pool().query("INSERT INTO tenants (id, name) VALUES ('quota-expiry', 'x')").execute());
        DeferredStore store = new DeferredStore(gateway.pool());
        assertThat(result(store.defer(BotRef.main(tenantId), "telegram", "c", "u1", "s", "old", "tokensPerDay"))).isTrue();
        assertThat(result(store.defer(BotRef.main(tenantId), "telegram", "c", "u1", "s", "old", "tokensPerDay"))).isFalse();
        assertThat(result(store.dropExpired(Instant.now().plus(Duration.ofDays(6))))).isZero();
        assertThat(result(store.dropExpired(Instant.now().plus(Duration.ofDays(7)).plusSeconds(5)))).isEqualTo(1);
    }

    private long count(String table, String tenantId) {
        return (Long) gateway.value("SELECT count(*) FROM " + table + " WHERE tenant_id = $1", tenantId);
    }
}
