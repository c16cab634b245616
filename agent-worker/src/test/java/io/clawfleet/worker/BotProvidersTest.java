package io.clawfleet.worker;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.TenantChanged;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.provider.BotProviders;
import io.clawfleet.shared.store.BotProviderStore;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.InboxStore;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.shared.testing.TestSecrets;
import io.clawfleet.testkit.mockllm.MockLlmServer;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Row;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tenant-owned model providers on a real worker (issue 14): a bot with providers of its own is answered by them,
 * with its own key, and its usage is priced; a change reaches the worker at once; a tenant the operator keeps off
 * the cluster's models is told its bot has none; an endpoint inside the cluster's networks is refused before any
 * connection; and the operator's model is never asked on such a bot's behalf.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class BotProvidersTest {

    private static final String CANARY = "sk-tenant-canary-5b1e0c9a77d2f4";
    private static final String OTHER_KEY = "sk-tenant-second-key-0d8e6c4b2a";

    private AgentFixture fixture;
    private MockLlmServer tenantModel;
    private BotProviderStore providers;

    @BeforeAll
    void start() {
        // the cluster's model has a price too: $0.5 and $2 per million tokens
        fixture = new AgentFixture().startWorker(Map.of("egress.allowedHosts", "127.0.0.1", "llm.priceInput", "0.5",
                "llm.priceOutput", "2"));
        tenantModel = new MockLlmServer(fixture.client, 0);
        result(tenantModel.start("127.0.0.1", 0));
        providers = new BotProviderStore(fixture.database.pool(), TestSecrets.tenantKeys(fixture.database.pool()));
        for (String bot : List.of("own", "switch", "closed", "inward")) {
            result(fixture.database.pool().preparedQuery("INSERT INTO bots (tenant_id, id, name) VALUES ($1, $2, $2)")
                    .execute(Tuple.of(AgentFixture.TENANT, bot)));
        }
    }

    @AfterAll
    void stop() {
        result(tenantModel.stop());
        fixture.close();
    }

    @Test
    void aBotWithItsOwnProviderIsAnsweredByItWithItsKeyAndItsUsageIsPriced() {
        BotRef bot = new BotRef(AgentFixture.TENANT, "own");
        put(bot, provider("mine", tenantUrl(), CANARY, new JsonObject().put("input", 3.0).put("output", 15.0)));
        long operatorCalls = fixture.model.requestCount();
        long tenantCalls = tenantModel.requestCount();

        String chat = AgentFixture.chat("own");
        send(bot, chat, "hello");
        List<String> replies = replies(bot, chat, 1);

        assertThat(replies.getFirst()).doesNotContain("Sorry");
        assertThat(tenantModel.requestCount()).isEqualTo(tenantCalls + 1);
        assertThat(tenantModel.lastCredential()).isEqualTo("Bearer " + CANARY);
        assertThat(fixture.model.requestCount()).isEqualTo(operatorCalls);
        Row usage = result(fixture.database.pool().preparedQuery("""
                        SELECT u.provider, u.input_tokens, u.output_tokens, u.cached_tokens, u.cost_micros
                          FROM llm_usage u JOIN chats c ON c.id = u.chat_id WHERE c.chat_key = $1""")
                .execute(Tuple.of(chat))).iterator().next();
        assertThat(usage.getString("provider")).isEqualTo("mine");
        assertThat(usage.getInteger("input_tokens")).isPositive();
        // $3 and $15 per million tokens are 3 and 15 micro-dollars per token
        assertThat(usage.getLong("cost_micros")).isEqualTo(3L * usage.getInteger("input_tokens") + 15L * usage.getInteger("output_tokens"));
    }

    @Test
    void theClustersModelIsPricedAtTheOperatorsPrice() {
        String chat = AgentFixture.chat("operator");
        fixture.send(chat, "hello");
        fixture.replies(chat, 1);
        Row usage = result(fixture.database.pool().preparedQuery("""
                        SELECT u.provider, u.input_tokens, u.output_tokens, u.cost_micros
                          FROM llm_usage u JOIN chats c ON c.id = u.chat_id WHERE c.chat_key = $1""")
                .execute(Tuple.of(chat))).iterator().next();
        assertThat(usage.getString("provider")).isEqualTo("default");
        assertThat(usage.getLong("cost_micros")).isEqualTo(Math.round(0.5 * usage.getInteger("input_tokens")
                + 2.0 * usage.getInteger("output_tokens")));
    }

    @Test
    void aChangeOfProvidersReachesTheWorkerAsSoonAsItIsAnnounced() {
        BotRef bot = new BotRef(AgentFixture.TENANT, "switch");
        put(bot, provider("first", tenantUrl(), CANARY, null));
        String chat = AgentFixture.chat("switch");
        send(bot, chat, "one");
        replies(bot, chat, 1);
        assertThat(tenantModel.lastCredential()).isEqualTo("Bearer " + CANARY);

        put(bot, provider("second", tenantUrl(), OTHER_KEY, null));
        fixture.worker.vertx().eventBus().publish(Addresses.TENANT_CHANGED, new TenantChanged(AgentFixture.TENANT));
        send(bot, chat, "two");
        replies(bot, chat, 2);

        assertThat(tenantModel.lastCredential()).isEqualTo("Bearer " + OTHER_KEY);
        assertThat(result(fixture.database.pool().preparedQuery("""
                        SELECT array_agg(u.provider ORDER BY u.id)::text FROM llm_usage u JOIN chats c ON c.id = u.chat_id
                         WHERE c.chat_key = $1""").execute(Tuple.of(chat))).iterator().next().getString(0))
                .isEqualTo("{first,second}");
    }

    @Test
    void aTenantKeptOffTheClustersModelsIsToldItsBotHasNoneAndTheOperatorsModelIsNotAsked() {
        BotRef bot = new BotRef(AgentFixture.TENANT, "closed");
        result(fixture.database.pool().query("UPDATE tenants SET operator_models = false WHERE id = 'acme'").execute());
        fixture.worker.vertx().eventBus().publish(Addresses.TENANT_CHANGED, new TenantChanged(AgentFixture.TENANT));
        try {
            long operatorCalls = fixture.model.requestCount();
            String chat = AgentFixture.chat("closed");
            send(bot, chat, "anyone there?");

            assertThat(replies(bot, chat, 1).getFirst()).contains("has no model provider")
                    .contains("PUT /api/v1/bots/closed/providers");
            assertThat(fixture.model.requestCount()).isEqualTo(operatorCalls);
        } finally {
            result(fixture.database.pool().query("UPDATE tenants SET operator_models = true WHERE id = 'acme'").execute());
            fixture.worker.vertx().eventBus().publish(Addresses.TENANT_CHANGED, new TenantChanged(AgentFixture.TENANT));
        }
    }

    @Test
    void anEndpointInsideTheClustersNetworksIsRefusedBeforeAnyConnection() {
        // 127.0.0.2 is loopback and not on the operator's allow-list (127.0.0.1 is, for the mock model)
        BotRef bot = new BotRef(AgentFixture.TENANT, "inward");
        put(bot, provider("inside", "http://127.0.0.2:" + tenantModel.port() + "/v1", CANARY, null));
        long tenantCalls = tenantModel.requestCount();
        long operatorCalls = fixture.model.requestCount();
        String chat = AgentFixture.chat("inward");
        send(bot, chat, "reach in");

        String reply = replies(bot, chat, 1).getFirst();
        assertThat(reply).contains("refused before connecting").doesNotContain(CANARY);
        assertThat(tenantModel.requestCount()).isEqualTo(tenantCalls);
        assertThat(fixture.model.requestCount()).isEqualTo(operatorCalls);
    }

    private void put(BotRef bot, JsonObject body) {
        result(providers.put(bot, previous -> BotProviders.parse(body, previous)));
    }

    private static JsonObject provider(String name, String baseUrl, String key, JsonObject price) {
        JsonObject spec = new JsonObject().put("type", "openai").put("baseUrl", baseUrl).put("model", "mock").put("apiKey", key);
        if (price != null) {
            spec.put("price", price);
        }
        return new JsonObject().put("providers", new JsonObject().put(name, spec));
    }

    private String tenantUrl() {
        return "http://127.0.0.1:" + tenantModel.port() + "/v1";
    }

    private void send(BotRef bot, String chat, String text) {
        InboundMessage message = result(fixture.inbox.accept(new InboxStore.Intake(bot.tenantId(), bot.botId(), "api", chat,
                fixture.partitioner.partitionOf(bot, "api", chat), UUID.randomUUID().toString(), "alice", "user", text, null,
                0, null, null))).message();
        fixture.worker.vertx().eventBus().publish(Addresses.partitionWake(message.partition()), new WakeUp(message));
    }

    private List<String> replies(BotRef bot, String chat, int count) {
        List<String> texts = new ArrayList<>();
        Await.until(count + " replies in " + chat, Duration.ofSeconds(30), () -> {
            texts.clear();
            result(fixture.outbox.repliesAfter(bot, "api", chat, 0, 1_000)).forEach(r -> texts.add(r.text()));
            return texts.size() >= count;
        });
        return texts;
    }
}
