package io.clawfleet.gateway;

import io.clawfleet.shared.message.Channels;
import io.clawfleet.shared.testing.Await;
import io.clawfleet.testkit.FakeDiscord;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Discord end to end at the gateway (issue 15): a bot registered with its token, its Gateway connection opened by this
 * gateway (identify, heartbeats), messages dispatched by {@link FakeDiscord} taken once and answered in their channel
 * with the REST API, a dropped connection resumed from the last event taken with nothing lost or answered twice, long
 * replies split under 2,000 characters, and Discord's rate-limit buckets kept. The worker is {@link
 * io.clawfleet.testkit.EchoWorker} ({@code re: <text>}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class DiscordChannelTest {

    private static final String KEY = "discord-key-0123456789abc";
    private static final String DM = "2200000000000000001";
    private static final String GUILD = "3300000000000000001";
    private static final String GUILD_CHANNEL = "3300000000000000002";
    private static final String USER = "4400000000000000001";

    private ChannelGateway gateway;
    private FakeDiscord discord;
    private long channelId;

    @BeforeAll
    void start() throws Exception {
        gateway = new ChannelGateway("gw-discord", KEY);
        discord = new FakeDiscord(gateway.vertx);
    }

    @AfterAll
    void stop() {
        discord.close();
        gateway.close();
    }

    private HttpResponse<String> register(String token) throws Exception {
        return gateway.call("POST", "/api/v1/channels/discord", new JsonObject().put("token", token).put("apiUrl", discord.url()));
    }

    @Test
    @Order(1)
    void aBotIsRegisteredWithItsCheckedTokenAndItsGatewayConnectionOpens() throws Exception {
        assertThat(register("short").statusCode()).isEqualTo(400);
        HttpResponse<String> wrong = register("x".repeat(60));
        assertThat(wrong.statusCode()).as(wrong.body()).isEqualTo(400);
        assertThat(wrong.body()).contains("token_check_failed");

        HttpResponse<String> registered = register(FakeDiscord.TOKEN);
        assertThat(registered.statusCode()).as(registered.body()).isEqualTo(201);
        JsonObject account = new JsonObject(registered.body());
        channelId = account.getLong("id");
        assertThat(account.getString("mode")).isEqualTo("gateway");
        assertThat(account.getString("accountUserId")).isEqualTo(FakeDiscord.BOT_USER);
        assertThat(account.getString("name")).isEqualTo(FakeDiscord.BOT_NAME);
        assertThat(registered.body()).doesNotContain(FakeDiscord.TOKEN);
        assertThat(account.getString("tokenHint")).isEqualTo("MTk4…" + FakeDiscord.TOKEN.substring(FakeDiscord.TOKEN.length() - 4));
        Await.until("the gateway connection", Duration.ofSeconds(20), () -> discord.connected());
        assertThat(discord.opens()).containsExactly("identify");
    }

    @Test
    @Order(2)
    void aDirectMessageIsAnsweredInItsChannelAndAServerChannelOnlyWhenMentioned() throws Exception {
        discord.message(DM, null, USER, "hello bot", false);
        Await.until("the reply to the DM", Duration.ofSeconds(20), () -> discord.sentTo(DM).size() == 1);
        assertThat(discord.sentTo(DM)).containsExactly("re: hello bot");
        assertThat(discord.sent().getFirst().getJsonObject("allowed_mentions").getJsonArray("parse")).isEmpty();

        discord.message(GUILD_CHANNEL, GUILD, USER, "chatter among people", false);
        discord.message(GUILD_CHANNEL, GUILD, USER, "<@" + FakeDiscord.BOT_USER + "> what time is it?", true);
        Await.until("the reply in the server channel", Duration.ofSeconds(20), () -> discord.sentTo(GUILD_CHANNEL).size() == 1);
        ChannelGateway.pause(500);
        assertThat(discord.sentTo(GUILD_CHANNEL)).containsExactly("re: @" + FakeDiscord.BOT_NAME + " what time is it?");
        // the bot's own message and another bot's are no messages
        discord.message(DM, null, FakeDiscord.BOT_USER, "re: hello bot", false);
        assertThat(gateway.inboxRows(Channels.DISCORD, channelId + ":%")).isEqualTo(2);
        assertThat(gateway.inboxRows(Channels.DISCORD, channelId + ":g" + GUILD_CHANNEL)).isEqualTo(1);
    }

    @Test
    @Order(3)
    void aDroppedConnectionIsResumedFromTheLastEventTakenLosingAndDoublingNothing() throws Exception {
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            discord.message(DM, null, USER, "before " + i, false);
            expected.add("re: before " + i);
        }
        discord.drop();
        // sent while the bot is away: Discord replays them on the resume
        for (int i = 0; i < 3; i++) {
            discord.message(DM, null, USER, "while away " + i, false);
            expected.add("re: while away " + i);
        }
        Await.until("the resumed session", Duration.ofSeconds(20), () -> discord.opens().size() == 2 && discord.connected());
        assertThat(discord.opens().get(1)).startsWith("resume:");
        for (int i = 0; i < 2; i++) {
            discord.message(DM, null, USER, "after " + i, false);
            expected.add("re: after " + i);
        }
        Await.until("every reply", Duration.ofSeconds(30), () -> discord.sentTo(DM).size() >= 1 + expected.size());
        ChannelGateway.pause(1_000);
        List<String> replies = discord.sentTo(DM);
        assertThat(replies.subList(1, replies.size())).containsExactlyElementsOf(expected);
        assertThat(gateway.inboxRows(Channels.DISCORD, channelId + ":" + DM)).isEqualTo(1 + expected.size());
    }

    @Test
    @Order(4)
    void longRepliesAreSplitUnder2000AndTheRateLimitBucketsAreKept() throws Exception {
        int before = discord.sentTo(DM).size();
        String paragraph = "word ".repeat(300).strip();
        discord.message(DM, null, USER, paragraph + "\n\n" + paragraph, false);
        Await.until("a long reply in parts", Duration.ofSeconds(20), () -> discord.sentTo(DM).size() >= before + 2);
        ChannelGateway.pause(500);
        List<String> all = discord.sentTo(DM);
        List<String> parts = all.subList(before, all.size());
        assertThat(parts).hasSize(2).allSatisfy(part -> assertThat(part.length()).isLessThanOrEqualTo(2000));
        assertThat(String.join("\n\n", parts)).isEqualTo("re: " + paragraph + "\n\n" + paragraph);

        // Two sends a second: twelve replies go out paced by the bucket the answers state, none lost, none twice.
        discord.bucketSize(2);
        String channel = "2200000000000000009";
        for (int i = 0; i < 12; i++) {
            discord.message(channel, null, USER, "burst " + i, false);
        }
        Await.until("every burst reply", Duration.ofSeconds(60), () -> discord.sentTo(channel).size() == 12);
        ChannelGateway.pause(500);
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            expected.add("re: burst " + i);
        }
        assertThat(discord.sentTo(channel)).containsExactlyElementsOf(expected);
        System.out.println("DiscordChannelTest: 12 replies at 2 a second, " + discord.limited() + " answered 429");
        assertThat(discord.limited()).as("sends that ran into a 429 (the buckets keep most out)").isLessThanOrEqualTo(3);
    }

    @Test
    @Order(5)
    void slashCommandsComeSignedWithTheApplicationsKeyAndAreMessagesInTheirChannel() throws Exception {
        HttpResponse<String> badKey = gateway.call("POST", "/api/v1/channels/discord", new JsonObject().put("token", FakeDiscord.TOKEN)
                .put("apiUrl", discord.url()).put("publicKey", "not-hex"));
        assertThat(badKey.statusCode()).isEqualTo(400);
        HttpResponse<String> registered = gateway.call("POST", "/api/v1/channels/discord", new JsonObject()
                .put("token", FakeDiscord.TOKEN).put("apiUrl", discord.url()).put("publicKey", discord.publicKey()));
        assertThat(registered.statusCode()).as(registered.body()).isEqualTo(201);
        JsonObject account = new JsonObject(registered.body());
        assertThat(account.getLong("id")).isEqualTo(channelId);
        String url = account.getString("interactionsUrl");
        assertThat(url).isEqualTo(gateway.publicUrl + "/hooks/discord/" + channelId);

        String ping = new JsonObject().put("id", "5500000000000000001").put("type", 1).put("application_id", "1").encode();
        long now = System.currentTimeMillis() / 1000;
        HttpResponse<String> pong = interaction(url, ping, Long.toString(now), FakeDiscord.sign(discord.signingKey(), Long.toString(now), ping));
        assertThat(pong.statusCode()).isEqualTo(200);
        assertThat(new JsonObject(pong.body()).getInteger("type")).isEqualTo(1);
        // What Discord sends to check that the endpoint refuses: a bad signature; and a stale one, another key's, none
        java.security.PrivateKey other = java.security.KeyPairGenerator.getInstance("Ed25519").generateKeyPair().getPrivate();
        assertThat(interaction(url, ping, Long.toString(now), FakeDiscord.sign(other, Long.toString(now), ping)).statusCode()).isEqualTo(401);
        assertThat(interaction(url, ping, Long.toString(now - 301), FakeDiscord.sign(discord.signingKey(), Long.toString(now - 301), ping))
                .statusCode()).isEqualTo(401);
        assertThat(interaction(url, ping + " ", Long.toString(now), FakeDiscord.sign(discord.signingKey(), Long.toString(now), ping))
                .statusCode()).isEqualTo(401);
        assertThat(interaction(url, ping, Long.toString(now), null).statusCode()).isEqualTo(401);

        String channel = "2200000000000000033";
        String ask = FakeDiscord.askCommand("5500000000000000002", channel, GUILD, USER, "is it raining?").encode();
        HttpResponse<String> asked = interaction(url, ask, Long.toString(now), FakeDiscord.sign(discord.signingKey(), Long.toString(now), ask));
        assertThat(asked.statusCode()).as(asked.body()).isEqualTo(200);
        JsonObject answer = new JsonObject(asked.body());
        assertThat(answer.getInteger("type")).isEqualTo(4);
        assertThat(answer.getJsonObject("data").getString("content")).isEqualTo("<@" + USER + "> asked: is it raining?");
        Await.until("the reply in the channel", Duration.ofSeconds(20), () -> discord.sentTo(channel).size() == 1);
        assertThat(discord.sentTo(channel)).containsExactly("re: is it raining?");
        // posted again (its answer lost): the same message, no second turn
        assertThat(interaction(url, ask, Long.toString(now), FakeDiscord.sign(discord.signingKey(), Long.toString(now), ask))
                .statusCode()).isEqualTo(200);
        ChannelGateway.pause(500);
        assertThat(discord.sentTo(channel)).hasSize(1);
        assertThat(gateway.inboxRows(Channels.DISCORD, channelId + ":g" + channel)).isEqualTo(1);
    }

    private HttpResponse<String> interaction(String url, String body, String timestamp, String signature) {
        java.net.http.HttpRequest.Builder request = java.net.http.HttpRequest.newBuilder(java.net.URI.create(
                        url.replace(gateway.publicUrl, gateway.base)))
                .header("content-type", "application/json").header("X-Signature-Timestamp", timestamp)
                .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body));
        if (signature != null) {
            request.header("X-Signature-Ed25519", signature);
        }
        return gateway.send(request);
    }
}
