package io.clawfleet.gateway;

import io.clawfleet.shared.testing.Await;
import io.vertx.core.MultiMap;
import io.vertx.core.http.HttpServer;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.sqlclient.Tuple;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Signed outbound webhooks (issue 15) end to end at a gateway: a receiver on loopback checks every delivery's signature
 * per the Standard Webhooks spec with its own code, and answers as a test scripts it (always 200, 500 twice then 200,
 * always 503). The worker is {@link io.clawfleet.testkit.EchoWorker}. Retries are 200 ms apart here, and an endpoint is
 * turned off after 1 s of failures.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class WebhooksTest {

    private static final String KEY = "webhooks-key-0123456789";

    /** A request the receiver got. */
    record Received(String path, MultiMap headers, String body) {
        JsonObject json() {
            return new JsonObject(body);
        }
    }

    private ChannelGateway gateway;
    private HttpServer receiver;
    private final List<Received> received = new ArrayList<>();
    private final Map<String, AtomicInteger> failuresLeft = new ConcurrentHashMap<>();
    private String hooks;

    @BeforeAll
    void start() throws Exception {
        gateway = new ChannelGateway("gw-webhooks", KEY, Map.of("webhooks.retryScheduleMs", "200,200,200",
                "webhooks.disableAfterMs", "1000"));
        receiver = result(gateway.vertx.createHttpServer().requestHandler(request -> request.body().onSuccess(body -> {
            synchronized (received) {
                received.add(new Received(request.path(), MultiMap.caseInsensitiveMultiMap().addAll(request.headers()), body.toString()));
            }
            AtomicInteger left = failuresLeft.get(request.path());
            boolean fail = request.path().startsWith("/down") || left != null && left.getAndDecrement() > 0;
            request.response().setStatusCode(fail ? (request.path().startsWith("/down") ? 503 : 500) : 200).end();
        })).listen(0, "127.0.0.1"));
        hooks = "http://127.0.0.1:" + receiver.actualPort();
    }

    @AfterAll
    void stop() {
        result(receiver.close());
        gateway.close();
    }

    private JsonObject endpoint(String path, String... events) throws Exception {
        HttpResponse<String> created = gateway.call("POST", "/api/v1/webhooks", new JsonObject().put("url", hooks + path)
                .put("events", new JsonArray(List.of(events))).put("description", "test " + path));
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        return new JsonObject(created.body());
    }

    private void message(String chat, String id, String text) throws Exception {
        HttpResponse<String> sent = gateway.call("POST", "/api/v1/messages", new JsonObject().put("chatId", chat).put("senderId", "alice")
                .put("messageId", id).put("text", text));
        assertThat(sent.statusCode()).as(sent.body()).isIn(200, 202);
    }

    private List<Received> at(String path) {
        synchronized (received) {
            return received.stream().filter(r -> r.path().equals(path)).toList();
        }
    }

    /** Standard Webhooks' check, written here apart from the gateway's signing code. */
    private static boolean signedBy(String secret, Received request) {
        String id = request.headers().get("webhook-id");
        String timestamp = request.headers().get("webhook-timestamp");
        String signatures = request.headers().get("webhook-signature");
        if (id == null || timestamp == null || signatures == null) {
            return false;
        }
        long age = System.currentTimeMillis() / 1000 - Long.parseLong(timestamp);
        if (Math.abs(age) > 300) {
            return false;
        }
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(Base64.getDecoder().decode(secret.substring("whsec_".length())), "HmacSHA256"));
            String expected = Base64.getEncoder().encodeToString(mac.doFinal((id + "." + timestamp + "." + request.body())
                    .getBytes(StandardCharsets.UTF_8)));
            for (String signature : signatures.split(" ")) {
                if (signature.equals("v1," + expected)) {
                    return true;
                }
            }
            return false;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void anEndpointGetsEachEventItSubscribedToSignedAndOnlyThose() throws Exception {
        JsonObject endpoint = endpoint("/ok", "message.received", "reply.sent");
        String secret = endpoint.getString("secret");
        assertThat(secret).startsWith("whsec_");
        message("wh-chat-1", "wh-m1", "hello hooks");
        Await.until("the message and its reply", Duration.ofSeconds(20), () -> at("/ok").size() >= 2);
        assertThat(at("/ok")).allMatch(request -> signedBy(secret, request), "signed with the endpoint's secret");
        assertThat(at("/ok")).noneMatch(request -> signedBy("whsec_" + Base64.getEncoder().encodeToString(new byte[32]), request));
        JsonObject in = at("/ok").stream().map(Received::json).filter(j -> j.getString("type").equals("message.received")).findFirst()
                .orElseThrow();
        assertThat(in.getJsonObject("data").getString("text")).isEqualTo("hello hooks");
        assertThat(in.getJsonObject("data").getString("chatId")).isEqualTo("wh-chat-1");
        assertThat(in.getJsonObject("data").getString("messageId")).isEqualTo("wh-m1");
        assertThat(in.getJsonObject("data").getString("botId")).isEqualTo("main");
        JsonObject out = at("/ok").stream().map(Received::json).filter(j -> j.getString("type").equals("reply.sent")).findFirst()
                .orElseThrow();
        assertThat(out.getJsonObject("data").getString("text")).isEqualTo("re: hello hooks");
        assertThat(at("/ok")).extracting(r -> r.headers().get("webhook-id")).doesNotHaveDuplicates().allMatch(id -> id.startsWith("msg_"));
        // the same message sent again is no new event; a dead letter is not one this endpoint asked for
        message("wh-chat-1", "wh-m1", "hello hooks");
        result(gateway.database.pool().preparedQuery("""
                INSERT INTO dead_letters (tenant_id, kind, ref_id, chat_id, payload, error)
                SELECT 'default', 'inbound', 'wh-dl-1', id, '{}', 'scripted' FROM chats WHERE chat_key = 'wh-chat-1'""").execute());
        ChannelGateway.pause(1_500);
        assertThat(at("/ok")).hasSize(2);
        // the secret was shown once: the list has a hint of it only
        String list = gateway.call("GET", "/api/v1/webhooks", null).body();
        assertThat(list).doesNotContain(secret).contains(endpoint.getString("secretHint"));
    }

    @Test
    void tasksAndDeadLettersAreEventsToo() throws Exception {
        JsonObject endpoint = endpoint("/ops", "task.fired", "dead_letter.created");
        message("wh-chat-2", "wh-m2", "make a chat");
        // what the scheduler writes when a task fires (a message of kind task), and a dead letter of that chat
        result(gateway.database.pool().preparedQuery("""
                INSERT INTO inbox (tenant_id, chat_id, partition, seq, idempotency_key, sender_id, kind, text)
                SELECT tenant_id, id, partition, in_seq + 1, 'task:wh-task:1', 'scheduler', 'task', 'daily summary'
                  FROM chats WHERE chat_key = 'wh-chat-2'""").execute());
        result(gateway.database.pool().preparedQuery("""
                INSERT INTO dead_letters (tenant_id, kind, ref_id, chat_id, payload, error, attempts)
                SELECT 'default', 'outbound', 'wh-dl-2', id, '{}', 'blocked by the user', 3 FROM chats WHERE chat_key = 'wh-chat-2'""")
                .execute());
        Await.until("two events", Duration.ofSeconds(20), () -> at("/ops").size() >= 2);
        assertThat(at("/ops")).allMatch(request -> signedBy(endpoint.getString("secret"), request));
        assertThat(at("/ops")).extracting(r -> r.json().getString("type")).containsExactlyInAnyOrder("task.fired", "dead_letter.created");
        JsonObject dead = at("/ops").stream().map(Received::json).filter(j -> j.getString("type").equals("dead_letter.created"))
                .findFirst().orElseThrow().getJsonObject("data");
        assertThat(dead.getString("error")).isEqualTo("blocked by the user");
        assertThat(dead.getInteger("attempts")).isEqualTo(3);
    }

    @Test
    void aFailingDeliveryIsTriedAgainWithTheSameIdUntilItIsDelivered() throws Exception {
        failuresLeft.put("/flaky", new AtomicInteger(2));
        JsonObject endpoint = endpoint("/flaky", "message.received");
        message("wh-chat-3", "wh-m3", "try again");
        Await.until("the third try", Duration.ofSeconds(20), () -> at("/flaky").size() >= 3);
        ChannelGateway.pause(1_000);
        List<Received> tries = at("/flaky");
        assertThat(tries).hasSize(3).allMatch(request -> signedBy(endpoint.getString("secret"), request));
        assertThat(tries).extracting(r -> r.headers().get("webhook-id")).containsOnly(tries.get(0).headers().get("webhook-id"));
        JsonArray deliveries = new JsonObject(gateway.call("GET", "/api/v1/webhooks/" + endpoint.getLong("id") + "/deliveries", null)
                .body()).getJsonArray("deliveries");
        assertThat(deliveries).hasSize(1);
        assertThat(deliveries.getJsonObject(0).getString("status")).isEqualTo("delivered");
        assertThat(deliveries.getJsonObject(0).getInteger("attempts")).isEqualTo(3);
        assertThat(deliveries.getJsonObject(0).getInteger("lastStatus")).isEqualTo(200);
        assertThat(deliveries.getJsonObject(0).getJsonObject("payload").getJsonObject("data").getString("text")).isEqualTo("try again");
    }

    @Test
    void anEndpointThatKeepsFailingIsTurnedOffAuditedAndCanBeTurnedOnAgain() throws Exception {
        JsonObject endpoint = endpoint("/down", "message.received");
        long id = endpoint.getLong("id");
        message("wh-chat-4", "wh-m4", "anyone?");
        JsonObject[] now = {null};
        Await.until("the endpoint turned off", Duration.ofSeconds(20), () -> {
            try {
                now[0] = new JsonObject(gateway.call("GET", "/api/v1/webhooks/" + id, null).body());
                return !now[0].getBoolean("enabled");
            } catch (Exception e) {
                return false;
            }
        });
        assertThat(now[0].getString("disabledReason")).startsWith("every delivery failed since");
        JsonArray audit = new JsonObject(gateway.call("GET", "/api/v1/audit?type=webhook_endpoint_disabled", null).body())
                .getJsonArray("events");
        assertThat(audit).isNotEmpty();
        assertThat(audit.encode()).contains(hooks + "/down");
        // the delivery ran out of tries; turned off, the endpoint gets nothing more
        int tries = at("/down").size();
        assertThat(tries).isBetween(3, 4);
        message("wh-chat-4", "wh-m5", "still there?");
        ChannelGateway.pause(1_500);
        assertThat(at("/down")).hasSize(tries);
        assertThat(result(gateway.database.pool().preparedQuery("SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1")
                .execute(Tuple.of(id))).iterator().next().getLong(0)).isEqualTo(1);
        // turned on again, and the failed delivery sent once more on request
        HttpResponse<String> on = gateway.call("PATCH", "/api/v1/webhooks/" + id, new JsonObject().put("enabled", true));
        assertThat(new JsonObject(on.body()).getBoolean("enabled")).isTrue();
        assertThat(new JsonObject(on.body()).getValue("disabledReason")).isNull();
        JsonObject delivery = new JsonObject(gateway.call("GET", "/api/v1/webhooks/" + id + "/deliveries", null).body())
                .getJsonArray("deliveries").getJsonObject(0);
        // out of tries (failed), or, when the endpoint was turned off before its last try was due (a slow machine: tries
        // go in 500 ms rounds), still pending, waiting for the endpoint
        assertThat(delivery.getString("status")).isIn("failed", "pending");
        assertThat(delivery.getInteger("lastStatus")).isEqualTo(503);
        assertThat(gateway.call("POST", "/api/v1/webhooks/" + id + "/deliveries/" + delivery.getString("id") + "/retry", null).statusCode())
                .isEqualTo(202);
        Await.until("tried again", Duration.ofSeconds(10), () -> at("/down").size() > tries);
        gateway.call("DELETE", "/api/v1/webhooks/" + id, null);
    }

    @Test
    void inboundSignedMessagesAreTakenOnceAndTheirRepliesGoOutAsEvents() throws Exception {
        HttpResponse<String> registered = gateway.call("POST", "/api/v1/channels/webhook", new JsonObject().put("name", "crm"));
        assertThat(registered.statusCode()).as(registered.body()).isEqualTo(201);
        JsonObject account = new JsonObject(registered.body());
        String secret = account.getString("secret");
        long id = account.getLong("id");
        assertThat(account.getString("webhookUrl")).isEqualTo(gateway.publicUrl + "/hooks/inbound/" + id);
        assertThat(account.getString("tokenHint")).startsWith("whsec_…");
        assertThat(gateway.call("GET", "/api/v1/channels", null).body()).doesNotContain(secret);
        JsonObject replies = endpoint("/replies", "reply.sent");
        String body = new JsonObject().put("chatId", "cust-1").put("text", "where is my order?").encode();
        long now = System.currentTimeMillis() / 1000;
        String path = "/hooks/inbound/" + id;
        // refused: another secret, an old or a future timestamp, no signature, a body changed after signing, another id
        String other = io.clawfleet.gateway.webhooks.StandardWebhooks.newSecret();
        assertThat(inbound(path, "evt-1", now, body, sign(other, "evt-1", now, body)).statusCode()).isEqualTo(401);
        assertThat(inbound(path, "evt-1", now - 301, body, sign(secret, "evt-1", now - 301, body)).statusCode()).isEqualTo(401);
        assertThat(inbound(path, "evt-1", now + 301, body, sign(secret, "evt-1", now + 301, body)).statusCode()).isEqualTo(401);
        assertThat(inbound(path, "evt-1", now, body, null).statusCode()).isEqualTo(401);
        assertThat(inbound(path, "evt-1", now, body.replace("order", "ORDER"), sign(secret, "evt-1", now, body)).statusCode())
                .isEqualTo(401);
        assertThat(inbound("/hooks/inbound/999999", "evt-1", now, body, sign(secret, "evt-1", now, body)).statusCode()).isEqualTo(401);
        assertThat(gateway.inboxRows("webhook", id + ":cust-1")).isZero();
        // taken, with the valid signature among others (a sender rotating its secret signs with both); a retry is no new message
        HttpResponse<String> taken = inbound(path, "evt-1", now, body, sign(other, "evt-1", now, body) + " " + sign(secret, "evt-1", now, body));
        assertThat(taken.statusCode()).as(taken.body()).isEqualTo(202);
        assertThat(new JsonObject(taken.body()).getString("status")).isEqualTo("accepted");
        assertThat(inbound(path, "evt-1", now, body, sign(secret, "evt-1", now, body)).statusCode()).isEqualTo(202);
        assertThat(gateway.inboxRows("webhook", id + ":cust-1")).isEqualTo(1);
        String bad = new JsonObject().put("chatId", "no spaces allowed").put("text", "x").encode();
        assertThat(inbound(path, "evt-2", now, bad, sign(secret, "evt-2", now, bad)).statusCode()).isEqualTo(400);
        // the reply is the bot's reply.sent event
        Await.until("the reply as an event", Duration.ofSeconds(20), () -> !at("/replies").isEmpty());
        ChannelGateway.pause(1_000);
        assertThat(at("/replies")).hasSize(1).allMatch(request -> signedBy(replies.getString("secret"), request));
        JsonObject data = at("/replies").get(0).json().getJsonObject("data");
        assertThat(data.getString("channel")).isEqualTo("webhook");
        assertThat(data.getString("chatId")).isEqualTo(id + ":cust-1");
        assertThat(data.getString("text")).isEqualTo("re: where is my order?");
    }

    private static String sign(String secret, String id, long timestamp, String body) {
        return io.clawfleet.gateway.webhooks.StandardWebhooks.sign(secret, id, timestamp, body);
    }

    private HttpResponse<String> inbound(String path, String id, long timestamp, String body, String signature) {
        java.net.http.HttpRequest.Builder request = java.net.http.HttpRequest.newBuilder(java.net.URI.create(gateway.base + path))
                .header("content-type", "application/json").header("webhook-id", id).header("webhook-timestamp", Long.toString(timestamp))
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body));
        if (signature != null) {
            request.header("webhook-signature", signature);
        }
        return gateway.send(request);
    }

    @Test
    void aBotHasAtMostSixteenEndpointsEvenWhenTheyAreMadeAtOnce() throws Exception {
        HttpResponse<String> bot = gateway.call("POST", "/api/v1/bots", new JsonObject().put("id", "many-hooks"));
        assertThat(bot.statusCode()).as(bot.body()).isEqualTo(201);
        List<java.util.concurrent.CompletableFuture<Integer>> made = new ArrayList<>();
        try (var pool = java.util.concurrent.Executors.newFixedThreadPool(20)) {
            for (int i = 0; i < 20; i++) {
                int n = i;
                made.add(java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                    try {
                        return gateway.call("POST", "/api/v1/bots/many-hooks/webhooks", new JsonObject().put("url", hooks + "/many/" + n)
                                .put("events", new JsonArray().add("reply.sent"))).statusCode();
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                }, pool));
            }
        }
        List<Integer> statuses = made.stream().map(java.util.concurrent.CompletableFuture::join).toList();
        assertThat(statuses).filteredOn(status -> status == 201).hasSize(16);
        assertThat(statuses).filteredOn(status -> status == 409).hasSize(4);
        assertThat(new JsonObject(gateway.call("GET", "/api/v1/bots/many-hooks/webhooks", null).body()).getJsonArray("webhooks"))
                .hasSize(16);
    }

    @Test
    void badEndpointsAreClearErrorsAndStoreNothing() throws Exception {
        int before = new JsonObject(gateway.call("GET", "/api/v1/webhooks", null).body()).getJsonArray("webhooks").size();
        assertThat(gateway.call("POST", "/api/v1/webhooks", new JsonObject().put("url", "ftp://example.com/x")
                .put("events", new JsonArray().add("reply.sent"))).statusCode()).isEqualTo(400);
        HttpResponse<String> privateAddress = gateway.call("POST", "/api/v1/webhooks", new JsonObject().put("url", "http://10.1.2.3/hook")
                .put("events", new JsonArray().add("reply.sent")));
        assertThat(privateAddress.statusCode()).isEqualTo(400);
        assertThat(privateAddress.body()).contains("may not go");
        assertThat(gateway.call("POST", "/api/v1/webhooks", new JsonObject().put("url", hooks + "/x")
                .put("events", new JsonArray().add("message.deleted"))).statusCode()).isEqualTo(400);
        assertThat(gateway.call("POST", "/api/v1/webhooks", new JsonObject().put("url", hooks + "/x")
                .put("events", new JsonArray())).statusCode()).isEqualTo(400);
        assertThat(gateway.call("PATCH", "/api/v1/webhooks/999999", new JsonObject().put("enabled", false)).statusCode()).isEqualTo(404);
        assertThat(new JsonObject(gateway.call("GET", "/api/v1/webhooks", null).body()).getJsonArray("webhooks")).hasSize(before);
    }
}
