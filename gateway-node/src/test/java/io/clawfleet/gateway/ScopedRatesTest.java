package io.clawfleet.gateway;

import io.clawfleet.gateway.TestGateway.Tenant;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.time.LocalTime;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A key's and a bot's message rates inside their tenant's, on a real gateway (issue 14): a tenant admin sets
 * {@code messagesPerMinute} on a key ({@code POST /api/v1/keys}) or a bot (its settings); over it, the key's or the
 * bot's messages get 429 naming that limit while the tenant's other keys and bots still send, and a message refused
 * by a narrower rate spends none of the tenant's tokens.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ScopedRatesTest {

    private static final String OPERATOR = "operator-key-scoped-rates-0123456789";
    private static final AtomicInteger TENANTS = new AtomicInteger();

    private TestGateway gateway;
    private GatewayClient client;

    @BeforeAll
    void start() {
        gateway = TestGateway.start(Map.of("nodeId", "gw-scoped-rates", "operatorKey", OPERATOR));
        client = gateway.client();
    }

    @AfterAll
    void stop() {
        gateway.stop();
    }

    /** The windows are minutes of the database's clock: start a case early in one so it ends in it. */
    @BeforeEach
    void earlyInAMinute() throws InterruptedException {
        int second = LocalTime.now(ZoneOffset.UTC).getSecond();
        if (second > 45) {
            Thread.sleep((61 - second) * 1_000L);
        }
    }

    private Tenant tenant(JsonObject limits) throws Exception {
        String id = "scoped-" + TENANTS.incrementAndGet();
        return gateway.tenant(id, id, limits);
    }

    private JsonObject key(Tenant t, JsonObject body) throws Exception {
        HttpResponse<String> made = client.call("POST", "/api/v1/keys", t.key(), body);
        assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
        return new JsonObject(made.body()).getJsonObject("key");
    }

    private HttpResponse<String> message(String key, String path, String id) throws Exception {
        return client.call("POST", path, key, new JsonObject().put("chatId", "c").put("senderId", "u")
                .put("messageId", id).put("text", "hello"));
    }

    private HttpResponse<String> completion(String key, String model) throws Exception {
        return client.call("POST", "/v1/chat/completions", key, new JsonObject().put("model", model)
                .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "hi"))));
    }

    @Test
    void aKeyLimitedToThreeGetsItsFourthMessageRefusedWhileAnotherKeyOfTheTenantStillSends() throws Exception {
        // given a key that may send 3 messages a minute
        Tenant t = tenant(new JsonObject());
        JsonObject limited = key(t, new JsonObject().put("name", "kiosk").put("scopes", new JsonArray().add("chat"))
                .put("messagesPerMinute", 3));
        assertThat(limited.getInteger("messagesPerMinute")).isEqualTo(3);

        // when it sends four
        for (int i = 0; i < 3; i++) {
            assertThat(message(limited.getString("key"), "/api/v1/messages", "k" + i).statusCode()).isEqualTo(202);
        }
        HttpResponse<String> over = message(limited.getString("key"), "/api/v1/messages", "k3");

        // then the fourth is refused, naming the key's limit, and the tenant's admin key still sends
        assertThat(over.statusCode()).as(over.body()).isEqualTo(429);
        JsonObject error = new JsonObject(over.body()).getJsonObject("error");
        assertThat(error.getString("code")).isEqualTo("rate_limit_exceeded");
        assertThat(error.getString("message")).contains("key '" + limited.getString("id") + "'", "3 messages per minute",
                "the key's 'messagesPerMinute'");
        assertThat(Long.parseLong(over.headers().firstValue("retry-after").orElseThrow())).isBetween(1L, 60L);
        assertThat(over.headers().firstValue("ratelimit-policy").orElseThrow()).isEqualTo("\"key-messages\";q=3;w=60");
        assertThat(over.headers().firstValue("ratelimit").orElseThrow()).startsWith("\"key-messages\";r=0;t=");
        assertThat(completion(limited.getString("key"), "default").statusCode()).isEqualTo(429);
        assertThat(message(t.key(), "/api/v1/messages", "a1").statusCode()).isEqualTo(202);
        assertThat(count("SELECT count(*) FROM inbox WHERE tenant_id = $1", t.id())).isEqualTo(4L);
    }

    @Test
    void aKeysRateIsListedKeptByRotationAndSetByTheOperatorToo() throws Exception {
        Tenant t = tenant(new JsonObject());
        JsonObject limited = key(t, new JsonObject().put("name", "kiosk").put("scopes", new JsonArray().add("chat"))
                .put("messagesPerMinute", 7));

        JsonArray listed = new JsonObject(client.call("GET", "/api/v1/keys", t.key(), null).body()).getJsonArray("keys");
        assertThat(listed.stream().map(JsonObject.class::cast).filter(k -> k.getString("id").equals(limited.getString("id")))
                .findFirst().orElseThrow().getInteger("messagesPerMinute")).isEqualTo(7);
        assertThat(listed.stream().map(JsonObject.class::cast).filter(k -> !k.getString("id").equals(limited.getString("id")))
                .findFirst().orElseThrow().getValue("messagesPerMinute")).isNull();
        HttpResponse<String> rotated = client.call("POST", "/api/v1/keys/" + limited.getString("id") + "/rotate", t.key(),
                new JsonObject());
        assertThat(rotated.statusCode()).as(rotated.body()).isEqualTo(201);
        assertThat(new JsonObject(rotated.body()).getJsonObject("key").getInteger("messagesPerMinute")).isEqualTo(7);

        HttpResponse<String> byOperator = client.call("POST", "/admin/v1/tenants/" + t.id() + "/keys", OPERATOR,
                new JsonObject().put("name", "ops").put("scopes", new JsonArray().add("chat")).put("messagesPerMinute", 1));
        assertThat(byOperator.statusCode()).as(byOperator.body()).isEqualTo(201);
        String opsKey = new JsonObject(byOperator.body()).getJsonObject("key").getString("key");
        assertThat(message(opsKey, "/api/v1/messages", "o1").statusCode()).isEqualTo(202);
        assertThat(message(opsKey, "/api/v1/messages", "o2").statusCode()).isEqualTo(429);
    }

    @Test
    void aBotLimitedToTwoRefusesItsThirdMessageWhileMainStillSends() throws Exception {
        // given a bot that may get 2 messages a minute
        Tenant t = tenant(new JsonObject());
        HttpResponse<String> made = client.call("POST", "/api/v1/bots", t.key(), new JsonObject().put("id", "support")
                .put("settings", new JsonObject().put("messagesPerMinute", 2)));
        assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
        assertThat(new JsonObject(made.body()).getJsonObject("bot").getJsonObject("settings").getInteger("messagesPerMinute"))
                .isEqualTo(2);

        // when it gets three
        assertThat(message(t.key(), "/api/v1/bots/support/messages", "s1").statusCode()).isEqualTo(202);
        assertThat(message(t.key(), "/api/v1/bots/support/messages", "s2").statusCode()).isEqualTo(202);
        HttpResponse<String> over = message(t.key(), "/api/v1/bots/support/messages", "s3");

        // then the third is refused, naming the bot's limit, on the OpenAI endpoint too, and main still gets messages
        assertThat(over.statusCode()).as(over.body()).isEqualTo(429);
        assertThat(new JsonObject(over.body()).getJsonObject("error").getString("message"))
                .contains("bot 'support'", "2 messages per minute", "'messagesPerMinute'");
        assertThat(over.headers().firstValue("ratelimit-policy").orElseThrow()).isEqualTo("\"bot-messages\";q=2;w=60");
        assertThat(over.headers().firstValue("ratelimit").orElseThrow()).startsWith("\"bot-messages\";r=0;t=");
        for (String model : List.of("support", "support/default")) {
            HttpResponse<String> openAi = completion(t.key(), model);
            assertThat(openAi.statusCode()).as(model).isEqualTo(429);
            assertThat(openAi.headers().firstValue("ratelimit-policy").orElseThrow()).startsWith("\"bot-messages\"");
        }
        assertThat(message(t.key(), "/api/v1/messages", "m1").statusCode()).isEqualTo(202);
        assertThat(message(t.key(), "/api/v1/bots/main/messages", "m2").statusCode()).isEqualTo(202);
    }

    @Test
    void aBotsRateIsASettingThatNullUnsets() throws Exception {
        // given main limited to 1 a minute through its settings
        Tenant t = tenant(new JsonObject());
        HttpResponse<String> set = client.call("PUT", "/api/v1/settings", t.key(), new JsonObject().put("messagesPerMinute", 1));
        assertThat(set.statusCode()).as(set.body()).isEqualTo(200);
        assertThat(new JsonObject(set.body()).getInteger("messagesPerMinute")).isEqualTo(1);
        assertThat(message(t.key(), "/api/v1/messages", "m1").statusCode()).isEqualTo(202);
        HttpResponse<String> over = completion(t.key(), "default");
        assertThat(over.statusCode()).as(over.body()).isEqualTo(429);
        assertThat(over.body()).contains("bot 'main'");

        // when the rate is unset
        HttpResponse<String> unset = client.call("PATCH", "/api/v1/bots/main", t.key(),
                new JsonObject().put("settings", new JsonObject().putNull("messagesPerMinute")));
        assertThat(unset.statusCode()).as(unset.body()).isEqualTo(200);

        // then it is gone from the settings and main takes messages again
        assertThat(new JsonObject(unset.body()).getJsonObject("bot").getJsonObject("settings").containsKey("messagesPerMinute"))
                .isFalse();
        assertThat(new JsonObject(client.call("GET", "/api/v1/settings", t.key(), null).body())
                .getValue("messagesPerMinute")).isNull();
        assertThat(message(t.key(), "/api/v1/messages", "m2").statusCode()).isEqualTo(202);
    }

    @Test
    void messagesRefusedByANarrowerRateSpendNoneOfTheTenantsTokens() throws Exception {
        // given a tenant that may send 5 a minute, a key that may send 2 and a bot that may get 1
        Tenant t = tenant(new JsonObject().put("messagesPerMinute", 5));
        String limited = key(t, new JsonObject().put("name", "kiosk").put("scopes", new JsonArray().add("chat"))
                .put("messagesPerMinute", 2)).getString("key");
        assertThat(client.call("POST", "/api/v1/bots", t.key(), new JsonObject().put("id", "support")
                .put("settings", new JsonObject().put("messagesPerMinute", 1))).statusCode()).isEqualTo(201);

        // when the key sends 5 (2 pass) and the bot gets 4 (1 passes)
        int accepted = 0;
        for (int i = 0; i < 5; i++) {
            accepted += message(limited, "/api/v1/messages", "k" + i).statusCode() == 202 ? 1 : 0;
        }
        for (int i = 0; i < 4; i++) {
            accepted += message(t.key(), "/api/v1/bots/support/messages", "s" + i).statusCode() == 202 ? 1 : 0;
        }
        assertThat(accepted).isEqualTo(3);

        // then the tenant still has 2 of its 5: the refused ones spent none
        assertThat(message(t.key(), "/api/v1/messages", "a1").statusCode()).isEqualTo(202);
        assertThat(message(t.key(), "/api/v1/messages", "a2").statusCode()).isEqualTo(202);
        HttpResponse<String> over = message(t.key(), "/api/v1/messages", "a3");
        assertThat(over.statusCode()).isEqualTo(429);
        assertThat(over.headers().firstValue("ratelimit-policy").orElseThrow()).isEqualTo("\"messages\";q=5;w=60");
        assertThat(count("SELECT sum(granted) FROM tenant_rate_windows WHERE tenant_id = $1 AND scope = ''", t.id()))
                .isEqualTo(5L);
        assertThat(count("SELECT count(*) FROM inbox WHERE tenant_id = $1", t.id())).isEqualTo(5L);
    }

    @Test
    void badRatesAreRefusedNamingTheField() throws Exception {
        Tenant t = tenant(new JsonObject());
        for (Object bad : List.of(-1, 1.5, "10", 1_000_001, true)) {
            HttpResponse<String> key = client.call("POST", "/api/v1/keys", t.key(), new JsonObject().put("name", "k")
                    .put("scopes", new JsonArray().add("chat")).put("messagesPerMinute", bad));
            assertThat(key.statusCode()).as("%s", bad).isEqualTo(400);
            assertThat(key.body()).contains("'messagesPerMinute'");
            HttpResponse<String> settings = client.call("PUT", "/api/v1/settings", t.key(),
                    new JsonObject().put("messagesPerMinute", bad));
            assertThat(settings.statusCode()).as("%s", bad).isEqualTo(400);
            assertThat(settings.body()).contains("'messagesPerMinute'");
            HttpResponse<String> patch = client.call("PATCH", "/api/v1/bots/main", t.key(),
                    new JsonObject().put("settings", new JsonObject().put("messagesPerMinute", bad)));
            assertThat(patch.statusCode()).as("%s", bad).isEqualTo(400);
            assertThat(patch.body()).contains("'messagesPerMinute'");
        }
        // nothing was stored
        assertThat(count("SELECT count(*) FROM api_keys WHERE tenant_id = $1", t.id())).isEqualTo(1L);
        assertThat(count("SELECT count(*) FROM bots WHERE tenant_id = $1 AND settings ? 'messagesPerMinute'", t.id())).isZero();
    }

    private long count(String sql, String tenantId) {
        Object value = gateway.value(sql, tenantId);
        return value == null ? 0 : ((Number) value).longValue();
    }
}
