package io.clawfleet.gateway;

import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.store.ConversationStore;
import io.clawfleet.shared.store.Fence;
import io.clawfleet.shared.store.HistoryEntry;
import io.clawfleet.shared.store.InboxStore;
import io.clawfleet.shared.store.LeaseStore;
import io.clawfleet.shared.store.TurnCommit;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.net.http.HttpResponse;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.stream.Collectors;

import static io.clawfleet.gateway.GatewayClient.ok;
import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Usage metering (issue 14) on a real gateway and embedded PostgreSQL: the counts are the exact sums of the rows
 * each thing leaves (messages, model calls, tool runs, files), grouped by day, bot, model and key; from is
 * inclusive and to exclusive; a turn replayed after a failover counts once; one tenant never sees another's.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class UsageApiTest {

    private static final String OPERATOR = "operator-key-usage-0123456789abcdef";
    private static final AtomicInteger TENANTS = new AtomicInteger();
    private static final String RANGE = "from=2026-01-10&to=2026-01-12";
    private static final String D1 = "2026-01-10";
    private static final String D2 = "2026-01-11";

    private TestGateway gateway;
    private GatewayClient client;

    @BeforeAll
    void start() {
        gateway = TestGateway.start(Map.of("nodeId", "gw-usage", "operatorKey", OPERATOR, "http.replyTimeoutMs", "300"));
        client = gateway.client();
    }

    @AfterAll
    void stop() {
        gateway.stop();
    }

    /** A tenant of its own: id, admin key and its id, a second key (scope chat) and its id. */
    private record Tenant(String id, String key, String keyId, String chatKey, String chatKeyId) {
    }

    private Tenant tenant() throws Exception {
        String id = "usage-" + TENANTS.incrementAndGet();
        TestGateway.Tenant first = gateway.tenant(id, "Usage " + id, null);
        JsonObject second = new JsonObject(ok(client.call("POST", "/api/v1/keys", first.key(), new JsonObject()
                .put("name", "chat only").put("scopes", new JsonArray().add("chat")))).body()).getJsonObject("key");
        return new Tenant(id, first.key(), first.keyId(), second.getString("key"), second.getString("id"));
    }

    /**
     * A known history in January 2026: messages, model calls (one unpriced, one of compaction), tool runs (one run
     * again after a failover, one refused), on bots main and sales, sent with two keys and a channel; and rows
     * just outside the range [2026-01-10, 2026-01-12).
     */
    private Tenant history() throws Exception {
        Tenant t = tenant();
        ok(call("POST", "/api/v1/bots", t.key(), new JsonObject().put("id", "sales")));
        long m1 = send(t.key(), "", "c1", "m1", "2026-01-10T09:00:00Z");
        long m2 = send(t.key(), "", "c1", "m2", "2026-01-11T09:00:00Z");
        long m3 = send(t.chatKey(), "/bots/sales", "c3", "m3", "2026-01-10T09:30:00Z");
        send(t.key(), "", "c1", "m0", "2026-01-09T23:59:59.999999Z"); // before from
        send(t.key(), "", "c1", "m9", "2026-01-12T00:00:00Z"); // at to: outside
        InboundMessage telegram = result(new InboxStore(gateway.pool()).accept(new InboxStore.Intake(t.id(), "main", "telegram",
                "tg-1", 0, "u1", "tg-user", InboundMessage.KIND_USER, "hi", null, 0, null, null)).map(InboxStore.Accepted::message));
        gateway.value("UPDATE inbox SET received_at = '2026-01-11T12:00:00Z' WHERE id = $1", telegram.id());
        long chat1 = (Long) gateway.value("SELECT chat_id FROM inbox WHERE id = $1", m1);
        long chat3 = (Long) gateway.value("SELECT chat_id FROM inbox WHERE id = $1", m3);
        // model calls: provider, model, input, output, cached, cost (null: no price)
        usageRow(t, "main", chat1, m1, "m1", 100, 10, 40, 500L, "2026-01-10T10:00:00Z");
        usageRow(t, "main", chat1, m1, "m2", 50, 5, 0, null, "2026-01-10T10:00:00Z");
        usageRow(t, "main", chat1, m2, "m1", 200, 20, 0, 1000L, "2026-01-11T23:59:59.999Z");
        usageRow(t, "main", chat1, null, "m1", 30, 3, 0, 100L, "2026-01-11T12:00:00Z"); // compaction: no message
        usageRow(t, "sales", chat3, m3, "m1", 7, 1, 0, 70L, "2026-01-10T10:00:00Z");
        usageRow(t, "main", chat1, m2, "m1", 999, 999, 0, 999L, "2026-01-09T23:59:59Z"); // before from
        usageRow(t, "main", chat1, m2, "m1", 999, 999, 0, 999L, "2026-01-12T00:00:00Z"); // at to
        // tool runs: (message, call index, outcome, ms, on a sandbox node)
        toolRow(t, "main", chat1, "c1", m1, 0, "success", "2026-01-10T10:00:00Z", 1200L, true);
        // run again after a failover: one run, of the last row's time
        toolRow(t, "main", chat1, "c1", m1, 0, "success", "2026-01-10T10:00:05Z", 1500L, true);
        toolRow(t, "main", chat1, "c1", m1, 1, "error", "2026-01-10T10:00:06Z", 250L, false);
        toolRow(t, "main", chat1, "c1", m1, 2, "denied", "2026-01-10T10:00:07Z", 9000L, true); // refused: not a run
        toolRow(t, "sales", chat3, "c3", m3, 0, "success", "2026-01-10T10:00:00Z", 30L, false);
        // audited before run times were recorded: a run of no time
        toolRow(t, "main", chat1, "c1", m2, 0, "success", "2026-01-11T10:00:00Z", null, null);
        toolRow(t, "main", chat1, "c1", m2, 1, "success", "2026-01-12T00:00:00Z", 7000L, true); // at to
        return t;
    }

    @Test
    void anAnswerNamesTheSourcesItsRangeReachesPastTheRetention() throws Exception {
        // given a tenant that keeps its messages 2 days and its usage rows 35, under the node's 365 days of audit
        String id = "usage-kept-" + TENANTS.incrementAndGet();
        TestGateway.Tenant kept = gateway.tenant(id, id, new JsonObject().put("inboxRetentionDays", 2)
                .put("usageRetentionDays", 35));
        java.time.Instant now = java.time.Instant.now();

        // when it asks for the last 40 days, then model calls, messages (their daily sums are kept as long as usage
        // rows) and keys (a tool run's is read from its message or its turn's calls, whichever is kept longer) from 35
        JsonObject far = usage(kept.key(), "/api/v1/usage?from=" + now.minus(java.time.Duration.ofDays(40)));
        JsonObject pruned = far.getJsonObject("prunedBefore");
        assertThat(pruned.fieldNames()).containsExactlyInAnyOrder("messages", "keys", "modelCalls");
        assertThat(java.time.Duration.between(java.time.Instant.parse(pruned.getString("modelCalls")), now.minus(java.time.Duration.ofDays(35))))
                .isBetween(java.time.Duration.ofMinutes(-1), java.time.Duration.ofMinutes(1));
        assertThat(pruned.getString("messages")).isEqualTo(pruned.getString("modelCalls"));
        assertThat(pruned.getString("keys")).isEqualTo(pruned.getString("modelCalls"));
        // and the operator's view of it says the same, while a tenant on the node's days (inbox 7, each call's row 35,
        // usage 400) names only the keys of tool runs (read from their message or their turn's usage rows)
        Tenant other = tenant();
        JsonObject admin = usage(OPERATOR, "/admin/v1/usage?tenant=" + id + "&from=" + now.minus(java.time.Duration.ofDays(40)));
        assertThat(admin.getJsonArray("tenants").getJsonObject(0).getJsonObject("prunedBefore").fieldNames())
                .containsExactlyInAnyOrder("messages", "keys", "modelCalls");
        assertThat(usage(other.key(), "/api/v1/usage?from=" + now.minus(java.time.Duration.ofDays(40)))
                .getJsonObject("prunedBefore").fieldNames()).containsExactly("keys");
        assertThat(usage(other.key(), "/api/v1/usage?from=" + now.minus(java.time.Duration.ofDays(30)))
                .getJsonObject("prunedBefore").fieldNames()).isEmpty();

        // when the range is within every retention, nothing is named
        assertThat(usage(kept.key(), "/api/v1/usage?from=" + now.minus(java.time.Duration.ofDays(1)))
                .getJsonObject("prunedBefore")).isEmpty();
    }

    @Test
    void totalsAreTheExactSumsOfTheRangesRows() throws Exception {
        Tenant t = history();
        JsonObject answer = usage(t.key(), "/api/v1/usage?" + RANGE);
        assertThat(answer.getString("from")).isEqualTo("2026-01-10T00:00:00Z");
        assertThat(answer.getString("to")).isEqualTo("2026-01-12T00:00:00Z");
        assertThat(answer.getJsonArray("groupBy")).isEmpty();
        assertThat(answer.getJsonArray("rows")).isEmpty();
        JsonObject totals = answer.getJsonObject("totals");
        assertThat(totals.getLong("messages")).isEqualTo(4);
        assertThat(totals.getLong("turns")).isEqualTo(3);
        assertThat(totals.getLong("modelCalls")).isEqualTo(5);
        assertThat(totals.getLong("inputTokens")).isEqualTo(387);
        assertThat(totals.getLong("outputTokens")).isEqualTo(39);
        assertThat(totals.getLong("cachedTokens")).isEqualTo(40);
        assertThat(totals.getLong("costMicros")).isEqualTo(1670);
        assertThat(totals.getString("costCoverage")).isEqualTo("partial");
        assertThat(totals.getLong("unpricedCalls")).isEqualTo(1);
        assertThat(totals.getLong("toolRuns")).isEqualTo(4);
        assertThat(totals.getLong("storageBytes")).isEqualTo(gateway.value(
                "SELECT sum(octet_length(content))::bigint FROM workspace_files WHERE tenant_id = $1", t.id())).isNotEqualTo(0L);
        // tool time in seconds to the ms: 1500 (the failover's last run) + 250 + 30 + 0 (a row without time)
        assertToolTime(totals, 1.78, 1.5);
        assertThat(answer.encode()).contains("\"toolSeconds\":1.78,\"sandboxSeconds\":1.5");
        assertThat(answer.getJsonObject("notMeasured")).isEmpty();
        // the fields of before stay
        assertThat(answer.getString("since")).isEqualTo(answer.getString("from"));
        assertThat(answer.getJsonObject("total").getLong("turns")).isEqualTo(3);
        assertThat(answer.getJsonObject("total").getLong("inputTokens")).isEqualTo(387);
        assertThat(answer.getJsonArray("usage").stream().mapToLong(r -> ((JsonObject) r).getLong("inputTokens")).sum())
                .isEqualTo(387);
    }

    @Test
    void usagePerKeyIsForAdminsOnlyAsTheKeyListIs() throws Exception {
        Tenant t = tenant();
        String reader = new JsonObject(ok(client.call("POST", "/api/v1/keys", t.key(), new JsonObject().put("name", "reader")
                .put("scopes", new JsonArray().add("read")))).body()).getJsonObject("key").getString("key");
        assertThat(client.call("GET", "/api/v1/usage?groupBy=day", reader, null).statusCode()).isEqualTo(200);
        HttpResponse<String> refused = client.call("GET", "/api/v1/usage?groupBy=day,key", reader, null);
        assertThat(refused.statusCode()).isEqualTo(403);
        assertThat(refused.body()).contains("groupBy=key needs a key with the admin scope");
        assertThat(client.call("GET", "/api/v1/usage?groupBy=key", t.key(), null).statusCode()).isEqualTo(200);
    }

    @Test
    void groupsByDayBotModelAndKey() throws Exception {
        Tenant t = history();
        // day: the boundaries hold to the microsecond
        Map<String, JsonObject> days = rows(t.key(), "groupBy=day", r -> r.getString("day"));
        assertThat(days.keySet()).containsExactly(D1, D2);
        assertMeasures(days.get(D1), 2L, 2, 3, 157, 570L, "partial", 3L);
        assertMeasures(days.get(D2), 2L, 1, 2, 230, 1100L, "complete", 1L);
        assertThat(days.get(D1).getValue("storageBytes")).isNull(); // storage is now, not per day
        assertToolTime(days.get(D1), 1.78, 1.5);
        assertToolTime(days.get(D2), 0.0, 0.0);
        // bot
        Map<String, JsonObject> bots = rows(t.key(), "groupBy=bot", r -> r.getString("bot"));
        assertThat(bots.keySet()).containsExactly("main", "sales");
        assertMeasures(bots.get("main"), 3L, 2, 4, 380, 1600L, "partial", 3L);
        assertMeasures(bots.get("sales"), 1L, 1, 1, 7, 70L, "complete", 1L);
        assertToolTime(bots.get("main"), 1.75, 1.5);
        assertToolTime(bots.get("sales"), 0.03, 0.0);
        assertThat(bots.get("sales").getLong("storageBytes")).isEqualTo(gateway.value(
                "SELECT sum(octet_length(content))::bigint FROM workspace_files WHERE tenant_id = $1 AND bot_id = 'sales'", t.id()));
        // model: messages and tool runs have none, so they are in the totals only
        Map<String, JsonObject> models = rows(t.key(), "groupBy=model", r -> r.getString("provider") + "/" + r.getString("model"));
        assertThat(models.keySet()).containsExactly("p/m1", "p/m2");
        assertMeasures(models.get("p/m1"), null, 3, 4, 337, 1670L, "complete", null);
        assertMeasures(models.get("p/m2"), null, 1, 1, 50, null, "none", null);
        assertToolTime(models.get("p/m1"), null, null);
        // key: the key that sent the message; compaction and the channel's message have none
        Map<String, JsonObject> keys = rows(t.key(), "groupBy=key", r -> String.valueOf(r.getString("key")));
        assertThat(keys.keySet()).containsExactlyInAnyOrder("null", t.keyId(), t.chatKeyId());
        assertMeasures(keys.get("null"), 1L, 0, 1, 30, 100L, "complete", 0L);
        assertMeasures(keys.get(t.keyId()), 2L, 2, 3, 350, 1500L, "partial", 3L);
        assertMeasures(keys.get(t.chatKeyId()), 1L, 1, 1, 7, 70L, "complete", 1L);
        assertToolTime(keys.get("null"), 0.0, 0.0);
        assertToolTime(keys.get(t.keyId()), 1.75, 1.5);
        assertToolTime(keys.get(t.chatKeyId()), 0.03, 0.0);
        // combinations, in either spelling
        Map<String, JsonObject> dayBot = rows(t.key(), "groupBy=day,bot", r -> r.getString("day") + "/" + r.getString("bot"));
        assertThat(dayBot.keySet()).containsExactly(D1 + "/main", D1 + "/sales", D2 + "/main");
        assertMeasures(dayBot.get(D1 + "/main"), 1L, 1, 2, 150, 500L, "partial", 2L);
        assertMeasures(dayBot.get(D1 + "/sales"), 1L, 1, 1, 7, 70L, "complete", 1L);
        assertMeasures(dayBot.get(D2 + "/main"), 2L, 1, 2, 230, 1100L, "complete", 1L);
        assertToolTime(dayBot.get(D1 + "/main"), 1.75, 1.5);
        assertToolTime(dayBot.get(D1 + "/sales"), 0.03, 0.0);
        assertToolTime(dayBot.get(D2 + "/main"), 0.0, 0.0);
        assertThat(rows(t.key(), "groupBy=bot&groupBy=day", r -> r.getString("day") + "/" + r.getString("bot"))).isEqualTo(dayBot);
        Map<String, JsonObject> all = rows(t.key(), "groupBy=key,model,bot,day",
                r -> r.getString("day") + "/" + r.getString("bot") + "/" + r.getString("model") + "/" + r.getString("key"));
        assertThat(all).hasSize(5);
        assertThat(all.values().stream().mapToLong(r -> r.getLong("inputTokens")).sum()).isEqualTo(387);
        // the totals do not depend on the grouping: a turn of two models is one turn
        JsonObject plain = usage(t.key(), "/api/v1/usage?" + RANGE).getJsonObject("totals");
        for (String groupBy : List.of("day", "bot", "model", "key", "day,bot,model,key")) {
            assertThat(usage(t.key(), "/api/v1/usage?" + RANGE + "&groupBy=" + groupBy).getJsonObject("totals")).as(groupBy)
                    .isEqualTo(plain);
        }
    }

    @Test
    void messagesCountTheSameOnceTheirInboxRowsArePruned() throws Exception {
        // given a known history whose messages are answered, and its usage per day, bot and key
        Tenant t = history();
        gateway.value("UPDATE inbox SET status = 'done' WHERE tenant_id = $1", t.id());
        Function<JsonObject, String> dayBotKey = r -> r.getString("day") + "/" + r.getString("bot") + "/" + r.getString("key");
        Map<String, JsonObject> before = rows(t.key(), "groupBy=day,bot,key", dayBotKey);
        JsonObject totalsBefore = usage(t.key(), "/api/v1/usage?" + RANGE).getJsonObject("totals");
        assertThat(totalsBefore.getLong("messages")).isEqualTo(4);

        // when retention prunes every inbox row of the tenant, a few at a time
        var retention = new io.clawfleet.shared.store.RetentionStore(gateway.pool());
        while (result(retention.pruneBatch(io.clawfleet.shared.store.RetentionStore.Kind.INBOX, t.id(), 7, 2)) > 0) {
            // the next batch
        }
        assertThat(gateway.value("SELECT count(*) FROM inbox WHERE tenant_id = $1", t.id())).isEqualTo(0L);

        // then the messages are counted as before, per day, bot and key, and in total
        // (this history's usage rows were written without their key, as rows from before V32 were, so they lose it
        // with their message: compare the messages of each group)
        Map<String, JsonObject> after = rows(t.key(), "groupBy=day,bot,key", dayBotKey);
        Function<Map<String, JsonObject>, Map<String, Long>> messages = rows -> rows.entrySet().stream()
                .filter(e -> e.getValue().getLong("messages", 0L) > 0)
                .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().getLong("messages")));
        assertThat(messages.apply(after)).isEqualTo(messages.apply(before)).hasSize(4);
        assertThat(usage(t.key(), "/api/v1/usage?" + RANGE).getJsonObject("totals").getLong("messages")).isEqualTo(4);
        // and what was summed is the tenant's alone, kept per UTC day: another tenant's usage of the range has none
        assertThat(gateway.value("SELECT sum(messages)::bigint FROM usage_messages_daily WHERE tenant_id = $1", t.id()))
                .isEqualTo(6L);
        assertThat(usage(tenant().key(), "/api/v1/usage?" + RANGE).getJsonObject("totals").getLong("messages")).isZero();
        // and one chat's messages are its inbox rows (sums have no chat): none left, which the answer says
        JsonObject chat = usage(t.key(), "/api/v1/usage?" + RANGE + "&chatId=c1");
        assertThat(chat.getJsonObject("totals").getLong("messages")).isZero();
        assertThat(chat.getJsonObject("prunedBefore").fieldNames()).contains("messages");
    }

    @Test
    void modelCallsCountTheSameOnceTheirUsageRowsArePruned() throws Exception {
        // given a known history and its usage per day, bot, model and key
        Tenant t = history();
        Function<JsonObject, String> group = r -> r.getString("day") + "/" + r.getString("bot") + "/" + r.getString("model")
                + "/" + r.getString("key");
        String all = "groupBy=day,bot,model,key";
        Map<String, JsonObject> before = rows(t.key(), all, group);
        JsonObject totalsBefore = usage(t.key(), "/api/v1/usage?" + RANGE).getJsonObject("totals");
        assertMeasures(totalsBefore, 4L, 3, 5, 387, 1670L, "partial", 4L);

        // when retention prunes every usage row of the tenant into the daily sums, a few at a time
        var retention = new io.clawfleet.shared.store.RetentionStore(gateway.pool());
        while (result(retention.pruneBatch(io.clawfleet.shared.store.RetentionStore.Kind.USAGE, t.id(), 7, 2)) > 0) {
            // the next batch
        }
        assertThat(gateway.value("SELECT count(*) FROM llm_usage WHERE tenant_id = $1", t.id())).isEqualTo(0L);

        // then the totals are the same, whatever the grouping: calls, turns, tokens, cost and its coverage
        JsonObject totalsAfter = usage(t.key(), "/api/v1/usage?" + RANGE).getJsonObject("totals");
        assertThat(totalsAfter).isEqualTo(totalsBefore);
        for (String groupBy : List.of("day", "bot", "model", "key", "day,bot,model,key")) {
            assertThat(usage(t.key(), "/api/v1/usage?" + RANGE + "&groupBy=" + groupBy).getJsonObject("totals")).as(groupBy)
                    .isEqualTo(totalsBefore);
        }
        // and so is each group, but for turns: the turn of two models (m1 and m2) counts under its first call's
        // model once summed, so the groups' turns add up to the total
        Map<String, JsonObject> after = rows(t.key(), all, group);
        assertThat(after.keySet()).isEqualTo(before.keySet());
        String secondModelOfTheTurn = D1 + "/main/m2/" + t.keyId();
        assertThat(before.get(secondModelOfTheTurn).getLong("turns")).isEqualTo(1);
        before.forEach((key, row) -> {
            JsonObject was = row.copy();
            JsonObject is = after.get(key).copy();
            long turnsWere = was.getLong("turns");
            assertThat(is.getLong("turns")).as(key).isEqualTo(key.equals(secondModelOfTheTurn) ? 0 : turnsWere);
            was.remove("turns");
            is.remove("turns");
            assertThat(is).as(key).isEqualTo(was);
        });
        assertThat(after.values().stream().mapToLong(r -> r.getLong("turns")).sum()).isEqualTo(3);
        // and another tenant's usage of the range has none of it
        assertThat(usage(tenant().key(), "/api/v1/usage?" + RANGE).getJsonObject("totals").getLong("modelCalls")).isZero();
        // and one chat's calls are its usage rows (sums have no chat): none left, which the answer says
        JsonObject chat = usage(t.key(), "/api/v1/usage?" + RANGE + "&chatId=c1");
        assertThat(chat.getJsonObject("totals").getLong("modelCalls")).isZero();
        assertThat(chat.getJsonObject("prunedBefore").fieldNames()).contains("modelCalls");
        assertThat(usage(t.key(), "/api/v1/usage?" + RANGE).getJsonObject("prunedBefore").fieldNames())
                .doesNotContain("modelCalls");
    }

    @Test
    void tokenQuotasCountTheCallsRetentionSummedToday() throws Exception {
        // given a tenant with token limits and a call of a few minutes ago
        Tenant t = tenant();
        gateway.value("UPDATE tenants SET limits = limits || '{\"tokensPerDay\": 100000, \"tokensPerMonth\": 100000}'"
                + " WHERE id = $1 RETURNING 1", t.id());
        long chatId = (Long) gateway.value("SELECT chat_id FROM inbox WHERE id = $1", send(t.key(), "", "c1", "q1", null));
        Instant at = Instant.now().minusSeconds(300).truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
        usageRow(t, "main", chatId, null, "m1", 120, 30, 0, null, at.toString());
        var quotas = new io.clawfleet.shared.store.QuotaStore(gateway.pool());
        var before = result(quotas.tokens(t.id(), at));
        assertThat(before.usedToday()).isEqualTo(150);
        assertThat(before.usedThisMonth()).isEqualTo(150);

        // when a node that keeps each call's row a minute prunes it
        assertThat(result(new io.clawfleet.shared.store.RetentionStore(gateway.pool())
                .pruneBatch(io.clawfleet.shared.store.RetentionStore.Kind.USAGE, t.id(), 0.0007, 10))).isEqualTo(1);

        // then the quotas count it as before, from the day's sums
        var after = result(quotas.tokens(t.id(), at));
        assertThat(after.usedToday()).isEqualTo(150);
        assertThat(after.usedThisMonth()).isEqualTo(150);
        // and not the next day's
        assertThat(result(quotas.tokens(t.id(), at.plus(java.time.Duration.ofDays(1)))).usedToday()).isZero();
    }

    @Test
    void aBotsRouteAndAChatNarrowTheUsage() throws Exception {
        Tenant t = history();
        JsonObject sales = usage(t.key(), "/api/v1/bots/sales/usage?" + RANGE).getJsonObject("totals");
        assertMeasures(sales, 1L, 1, 1, 7, 70L, "complete", 1L);
        assertToolTime(sales, 0.03, 0.0);
        assertThat(sales.getLong("storageBytes")).isEqualTo(gateway.value(
                "SELECT sum(octet_length(content))::bigint FROM workspace_files WHERE tenant_id = $1 AND bot_id = 'sales'", t.id()));
        JsonObject chat = usage(t.key(), "/api/v1/usage?" + RANGE + "&chatId=c1").getJsonObject("totals");
        assertMeasures(chat, 2L, 2, 4, 380, 1600L, "partial", 3L);
        assertToolTime(chat, 1.75, 1.5);
        assertThat(chat.getValue("storageBytes")).isNull(); // a chat has no storage of its own
        // the older parameter names still work
        assertThat(usage(t.key(), "/api/v1/usage?since=2026-01-10T00:00:00Z&until=2026-01-11T00:00:00Z").getJsonObject("totals")
                .getLong("inputTokens")).isEqualTo(157);
    }

    @Test
    void theKeyThatSentAMessageIsRecordedWithIt() throws Exception {
        Tenant t = tenant();
        long byAdmin = send(t.key(), "", "k", "m1", null);
        long byChatKey = send(t.chatKey(), "", "k", "m2", null);
        // a retry with another key is the same message: its key stays the first one's
        assertThat(call("POST", "/api/v1/messages", t.chatKey(), message("k", "m1")).statusCode()).isEqualTo(200);
        // the OpenAI-compatible endpoint records its key too (no worker here: the answer times out, the message is in)
        call("POST", "/v1/chat/completions", t.chatKey(), new JsonObject().put("model", "default").put("user", "k")
                .put("messages", new JsonArray().add(new JsonObject().put("role", "user").put("content", "hi"))));
        assertThat(gateway.value("SELECT api_key_id FROM inbox WHERE id = $1", byAdmin)).isEqualTo(t.keyId());
        assertThat(gateway.value("SELECT api_key_id FROM inbox WHERE id = $1", byChatKey)).isEqualTo(t.chatKeyId());
        assertThat(gateway.value("SELECT count(*) FROM inbox WHERE tenant_id = $1 AND api_key_id = $2", t.id(), t.chatKeyId()))
                .isEqualTo(2L);
        // and the default range (the last 30 days, to the end of today) counts them per key
        Map<String, JsonObject> keys = new java.util.HashMap<>();
        for (Object row : usage(t.key(), "/api/v1/usage?groupBy=key").getJsonArray("rows")) {
            keys.put(((JsonObject) row).getString("key"), (JsonObject) row);
        }
        assertThat(keys.get(t.keyId()).getLong("messages")).isEqualTo(1);
        assertThat(keys.get(t.chatKeyId()).getLong("messages")).isEqualTo(2);
    }

    @Test
    void aGroupCommitOfIntakesRecordsEachMessagesKey() throws Exception {
        // given messages of two chats committed in one statement (the gateway's intake under load)
        Tenant t = tenant();
        InboxStore inbox = new InboxStore(gateway.pool());
        List<InboxStore.Accepted> accepted = result(inbox.acceptAll(List.of(
                new InboxStore.Intake(t.id(), "main", "api", "g1", 0, "m1", "ann", InboundMessage.KIND_USER, "hi", null, 0, null,
                        null, t.keyId()),
                new InboxStore.Intake(t.id(), "main", "telegram", "g2", 0, "m1", "bob", InboundMessage.KIND_USER, "hi", null, 0,
                        null, null)), 0));
        // then each row carries its own key, none for the channel's
        assertThat(gateway.value("SELECT api_key_id FROM inbox WHERE id = $1", accepted.get(0).message().id())).isEqualTo(t.keyId());
        assertThat(gateway.value("SELECT api_key_id FROM inbox WHERE id = $1", accepted.get(1).message().id())).isNull();
    }

    @Test
    void aKeyOutlivesTheMessageItWasReadFrom() throws Exception {
        // given a turn of a message sent with the admin key: two model calls committed, and a tool run
        Tenant t = tenant();
        InboundMessage message = sentAndPending(t, "keyed");
        long id = message.id();
        int p = message.partition();
        long epoch = claim("w-keyed", p);
        result(new ConversationStore(gateway.pool()).commit(new TurnCommit(new Fence(p, "w-keyed", epoch), message,
                List.of(HistoryEntry.assistant("a")), "a", null,
                List.of(new TurnCommit.Usage("p", "m1", 11, 3), new TurnCommit.Usage("p", "m1", 13, 5)), null, false, null)));
        long chat = (Long) gateway.value("SELECT chat_id FROM inbox WHERE id = $1", id);
        toolRow(t, "main", chat, "keyed", id, 0, "success", java.time.Instant.now().minusSeconds(60).toString(), 40L, false);
        assertThat(gateway.value("SELECT count(*) FROM llm_usage WHERE inbox_id = $1 AND api_key_id = $2", id, t.keyId()))
                .as("the commit copies the message's key into its usage rows").isEqualTo(2L);

        // when the message's inbox row is pruned (made old enough first)
        gateway.value("UPDATE inbox SET received_at = now() - interval '10 days' WHERE id = $1", id);
        assertThat(result(new io.clawfleet.shared.store.RetentionStore(gateway.pool())
                .pruneBatch(io.clawfleet.shared.store.RetentionStore.Kind.INBOX, t.id(), 7, 100))).isEqualTo(1);

        // then its message, its model calls and its tool run still count under its key
        JsonObject row = usage(t.key(), "/api/v1/usage?groupBy=key").getJsonArray("rows").stream()
                .map(r -> (JsonObject) r).filter(r -> t.keyId().equals(r.getString("key"))).findFirst().orElseThrow();
        assertThat(row.getLong("messages")).isEqualTo(1);
        assertThat(row.getLong("modelCalls")).isEqualTo(2);
        assertThat(row.getLong("inputTokens")).isEqualTo(24);
        assertThat(row.getLong("toolRuns")).isEqualTo(1);
    }

    @Test
    void aTurnReplayedAfterAFailoverIsCountedOnce() throws Exception {
        Tenant t = tenant();
        InboundMessage message = sentAndPending(t, "replayed");
        int p = message.partition();
        LeaseStore leases = new LeaseStore(gateway.pool());
        ConversationStore conversations = new ConversationStore(gateway.pool());
        long first = claim("w1", p);
        List<TurnCommit.Usage> calls = List.of(new TurnCommit.Usage("p", "m1", 11, 3), new TurnCommit.Usage("p", "m1", 13, 5));
        // given a turn committed by its first owner
        result(conversations.commit(new TurnCommit(new Fence(p, "w1", first), message, List.of(HistoryEntry.assistant("a")),
                "a", null, calls, null, false, null)));
        // when the partition's next owner runs the same message again (its first owner looked dead) and commits
        long second = result(leases.claim("w2", Set.of(p), 60_000, Set.of("w1"))).get(p);
        var replay = result(conversations.commit(new TurnCommit(new Fence(p, "w2", second), message,
                List.of(HistoryEntry.assistant("b")), "b", null, calls, null, false, null)));
        // then the replay changes nothing, and the usage is the first commit's, once
        assertThat(replay).isInstanceOf(ConversationStore.CommitResult.AlreadyDone.class);
        JsonObject totals = usage(t.key(), "/api/v1/usage").getJsonObject("totals");
        assertThat(totals.getLong("turns")).isEqualTo(1);
        assertThat(totals.getLong("modelCalls")).isEqualTo(2);
        assertThat(totals.getLong("inputTokens")).isEqualTo(24);
        assertThat(totals.getLong("outputTokens")).isEqualTo(8);
        assertThat(totals.getLong("messages")).isEqualTo(1);
    }

    @Test
    void badParametersAreRefusedNamingThem() throws Exception {
        Tenant t = tenant();
        Map<String, String> refused = Map.of(
                "from=yesterday", "'from'",
                "since=yesterday", "'since'",
                "to=2026-13-01", "'to'",
                "from=2026-01-12&to=2026-01-10", "'from'",
                "from=2026-01-10&to=2026-01-10", "'from'",
                "from=2025-01-01&to=2026-02-06", "400 days",
                "from=2026-01-01&since=2026-01-01", "'since'",
                "groupBy=week", "'groupBy'",
                "groupBy=day,", "'groupBy'");
        for (var bad : refused.entrySet()) {
            for (String path : List.of("/api/v1/usage?", "/api/v1/bots/main/usage?")) {
                HttpResponse<String> answer = call("GET", path + bad.getKey(), t.key(), null);
                assertThat(answer.statusCode()).as(path + bad.getKey()).isEqualTo(400);
                assertThat(answer.body()).as(path + bad.getKey()).contains(bad.getValue());
            }
            HttpResponse<String> admin = client.call("GET", "/admin/v1/usage?" + bad.getKey(), OPERATOR, null);
            assertThat(admin.statusCode()).as("admin " + bad.getKey()).isEqualTo(400);
        }
        // exactly 400 days is allowed
        assertThat(call("GET", "/api/v1/usage?from=2025-01-01&to=2026-02-05", t.key(), null).statusCode()).isEqualTo(200);
        for (String bad : List.of("limit=0", "limit=201", "cursor=Not!", "tenant=Not!")) {
            HttpResponse<String> admin = client.call("GET", "/admin/v1/usage?" + bad, OPERATOR, null);
            assertThat(admin.statusCode()).as(bad).isEqualTo(400);
            assertThat(admin.body()).as(bad).contains("'" + bad.substring(0, bad.indexOf('=')) + "'");
        }
        assertThat(client.call("GET", "/admin/v1/usage?tenant=no-such-tenant", OPERATOR, null).statusCode()).isEqualTo(404);
    }

    @Test
    void theOperatorSeesEachTenantsUsageAPageAtATime() throws Exception {
        Tenant busy = history();
        Tenant idle = tenant();
        // one tenant
        JsonObject one = usage(OPERATOR, "/admin/v1/usage?" + RANGE + "&tenant=" + busy.id());
        JsonArray tenants = one.getJsonArray("tenants");
        assertThat(tenants).hasSize(1);
        JsonObject entry = tenants.getJsonObject(0);
        assertThat(entry.getJsonObject("tenant")).isEqualTo(new JsonObject().put("id", busy.id()).put("name", "Usage " + busy.id())
                .put("status", "active"));
        assertThat(entry.getJsonObject("totals")).isEqualTo(usage(busy.key(), "/api/v1/usage?" + RANGE).getJsonObject("totals"));
        // grouped within the tenant
        JsonArray byBot = usage(OPERATOR, "/admin/v1/usage?" + RANGE + "&groupBy=bot&tenant=" + busy.id())
                .getJsonArray("tenants").getJsonObject(0).getJsonArray("rows");
        assertThat(byBot.stream().map(r -> ((JsonObject) r).getString("bot")).toList()).containsExactly("main", "sales");
        // every tenant, in pages: an idle one has zeros, not nothing
        Map<String, JsonObject> seen = new java.util.LinkedHashMap<>();
        String cursor = null;
        do {
            JsonObject page = usage(OPERATOR, "/admin/v1/usage?" + RANGE + "&limit=2" + (cursor == null ? "" : "&cursor=" + cursor));
            assertThat(page.getJsonArray("tenants").size()).isLessThanOrEqualTo(2);
            page.getJsonArray("tenants").forEach(e -> seen.put(((JsonObject) e).getJsonObject("tenant").getString("id"),
                    ((JsonObject) e).getJsonObject("totals")));
            cursor = page.getString("nextCursor");
        } while (cursor != null);
        assertThat(seen).containsKeys(busy.id(), idle.id());
        assertThat(seen.get(busy.id()).getLong("inputTokens")).isEqualTo(387);
        JsonObject nothing = seen.get(idle.id());
        assertThat(nothing.getLong("messages")).isZero();
        assertThat(nothing.getLong("modelCalls")).isZero();
        assertThat(nothing.getLong("costMicros")).isZero();
        assertThat(nothing.getString("costCoverage")).isEqualTo("complete");
        // a tenant's key is not the operator's
        assertThat(call("GET", "/admin/v1/usage", busy.key(), null).statusCode()).isEqualTo(401);
    }

    @Test
    void aTenantNeverSeesAnothersUsage() throws Exception {
        Tenant a = history();
        Tenant b = tenant();
        JsonObject mine = usage(b.key(), "/api/v1/usage?" + RANGE + "&groupBy=day,bot,model,key");
        assertThat(mine.getJsonArray("rows")).isEmpty();
        assertThat(mine.getJsonObject("totals").getLong("messages")).isZero();
        assertThat(mine.getJsonObject("totals").getLong("modelCalls")).isZero();
        assertThat(mine.getJsonObject("totals").getLong("toolRuns")).isZero();
        assertThat(mine.encode()).doesNotContain(a.keyId(), a.chatKeyId(), "sales");
        // A's chat and bot are not B's
        assertThat(usage(b.key(), "/api/v1/usage?" + RANGE + "&chatId=c1").getJsonObject("totals").getLong("messages")).isZero();
        assertThat(call("GET", "/api/v1/bots/sales/usage?" + RANGE, b.key(), null).statusCode()).isEqualTo(404);
    }

    // --- helpers ---------------------------------------------------------------------------------------------

    /** Sends a message through the API; moves its acceptance to {@code at} (null: now). Returns its inbox id. */
    private long send(String key, String botPrefix, String chat, String messageId, String at) throws Exception {
        long id = Long.parseLong(new JsonObject(ok(call("POST", "/api/v1" + botPrefix + "/messages", key, message(chat, messageId)))
                .body()).getString("id"));
        if (at != null) {
            gateway.value("UPDATE inbox SET received_at = $2 WHERE id = $1", id, OffsetDateTime.parse(at));
        }
        return id;
    }

    private static JsonObject message(String chat, String messageId) {
        return new JsonObject().put("chatId", chat).put("senderId", "ann").put("messageId", messageId).put("text", "hi");
    }

    private void usageRow(Tenant t, String bot, long chatId, Long inboxId, String model, int input, int output, int cached,
                          Long cost, String at) {
        gateway.value("""
                INSERT INTO llm_usage (tenant_id, bot_id, chat_id, inbox_id, provider, model, input_tokens, output_tokens,
                                       cached_tokens, cost_micros, created_at)
                VALUES ($1, $2, $3, $4, 'p', $5, $6, $7, $8, $9, $10) RETURNING id""",
                t.id(), bot, chatId, inboxId, model, input, output, cached, cost, OffsetDateTime.parse(at));
    }

    /** A tool call's audit row as ToolRunner writes it; {@code millis} and {@code sandbox} null: a row of before run times. */
    private void toolRow(Tenant t, String bot, long chatId, String chat, long inboxId, int call, String outcome, String at,
                         Long millis, Boolean sandbox) {
        JsonObject metadata = new JsonObject().put("inboxId", inboxId).put("call", call);
        if (millis != null) {
            metadata.put("durationMs", millis).put("sandbox", sandbox);
        }
        gateway.value("""
                INSERT INTO audit_events (tenant_id, event_type, tool_name, chat_id, channel, chat_key, outcome, metadata_json,
                                          bot_id, at)
                VALUES ($1, 'tool_call', $8, $2, 'api', $3, $4, $5, $6, $7) RETURNING id""",
                t.id(), chatId, chat, outcome, metadata, bot, OffsetDateTime.parse(at),
                Boolean.FALSE.equals(sandbox) ? "fs_read" : "web_fetch");
    }

    /** Tool time in seconds (exact to the ms); null where the group cannot have it. */
    private static void assertToolTime(JsonObject row, Double toolSeconds, Double sandboxSeconds) {
        assertThat(row.getDouble("toolSeconds")).as("toolSeconds of %s", row).isEqualTo(toolSeconds);
        assertThat(row.getDouble("sandboxSeconds")).as("sandboxSeconds of %s", row).isEqualTo(sandboxSeconds);
    }

    private static void assertMeasures(JsonObject row, Long messages, long turns, long calls, long input, Long cost,
                                       String coverage, Long toolRuns) {
        assertThat(row.getLong("messages")).as("messages of %s", row).isEqualTo(messages);
        assertThat(row.getLong("turns")).as("turns of %s", row).isEqualTo(turns);
        assertThat(row.getLong("modelCalls")).as("modelCalls of %s", row).isEqualTo(calls);
        assertThat(row.getLong("inputTokens")).as("inputTokens of %s", row).isEqualTo(input);
        assertThat(row.getLong("costMicros")).as("costMicros of %s", row).isEqualTo(cost);
        assertThat(row.getString("costCoverage")).as("costCoverage of %s", row).isEqualTo(coverage);
        assertThat(row.getLong("toolRuns")).as("toolRuns of %s", row).isEqualTo(toolRuns);
    }

    /** The rows of the tenant's usage in {@link #RANGE}, by a key made of their dimensions, in answer order. */
    private Map<String, JsonObject> rows(String key, String query, Function<JsonObject, String> id) throws Exception {
        return usage(key, "/api/v1/usage?" + RANGE + "&" + query).getJsonArray("rows").stream().map(r -> (JsonObject) r)
                .collect(Collectors.toMap(id, r -> r, (x, y) -> {
                    throw new AssertionError("two rows of one group: " + x + ", " + y);
                }, java.util.LinkedHashMap::new));
    }

    /** Message m1 of the chat, sent with the tenant's admin key, as its worker gets it from the inbox. */
    private InboundMessage sentAndPending(Tenant t, String chat) throws Exception {
        long id = send(t.key(), "", chat, "m1", null);
        return result(new InboxStore(gateway.pool()).pendingInChat(
                (Long) gateway.value("SELECT chat_id FROM inbox WHERE id = $1", id), 0, 10)).get(0);
    }

    /** Takes the partition's lease for {@code worker} from whoever holds it; answers the new epoch. */
    private long claim(String worker, int partition) {
        String owner = (String) gateway.value("SELECT owner_node FROM partition_leases WHERE partition = $1", partition);
        return result(new LeaseStore(gateway.pool()).claim(worker, Set.of(partition), 60_000,
                owner == null ? Set.of() : Set.of(owner))).get(partition);
    }

    private JsonObject usage(String key, String path) throws Exception {
        return new JsonObject(ok(call("GET", path, key, null)).body());
    }

    private HttpResponse<String> call(String method, String path, String key, JsonObject body) throws Exception {
        return client.call(method, path, key, body);
    }
}
