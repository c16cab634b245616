package io.clawfleet.deploy;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;

/** {@code clawfleet pairings list|approve}: the pairing codes unknown senders got (docs/CHANNELS.md#who-may-talk-to-a-bot). */
@Command(name = "pairings", mixinStandardHelpOptions = true,
        description = "List the pairing codes unknown senders were given, and approve one.",
        subcommands = {PairingsCommand.ListCommand.class, PairingsCommand.ApproveCommand.class})
final class PairingsCommand implements Runnable {

    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "List the bot's live pairing codes, oldest first.")
    static final class ListCommand implements Callable<Integer> {
        @Mixin
        GatewayConnection connection;

        @Mixin
        BotOption bot;

        @Override
        public Integer call() throws Exception {
            HttpResponse<String> response = connection.send("GET", bot.api() + "/pairings");
            if (response.statusCode() != 200) {
                System.err.println("clawfleet pairings: " + response.statusCode() + " " + response.body());
                return 1;
            }
            JsonArray pairings = new JsonObject(response.body()).getJsonArray("pairings");
            if (pairings.isEmpty()) {
                System.out.println("no pairing codes waiting");
            }
            for (int i = 0; i < pairings.size(); i++) {
                JsonObject p = pairings.getJsonObject(i);
                System.out.printf("%s  sender %s  chat %s  channel %d  until %s%n", p.getString("code"), p.getString("senderId"),
                        p.getString("chatId"), p.getLong("channelId"), p.getString("expiresAt"));
            }
            return 0;
        }
    }

    @Command(name = "approve", mixinStandardHelpOptions = true,
            description = "Approve a pairing code: its sender may talk to the bot from now on, and is told so.")
    static final class ApproveCommand implements Callable<Integer> {
        @Mixin
        GatewayConnection connection;

        @Mixin
        BotOption bot;

        @Parameters(paramLabel = "CODE", description = "The code the sender was given, like ABCD-EFGH (any case, dash optional).")
        String code;

        @Override
        public Integer call() throws Exception {
            HttpResponse<String> response = connection.send("POST", bot.api() + "/pairings/"
                    + URLEncoder.encode(code.strip(), StandardCharsets.UTF_8) + "/approve");
            if (response.statusCode() != 200) {
                System.err.println("clawfleet pairings: " + response.statusCode() + " " + response.body());
                return 1;
            }
            JsonObject approved = new JsonObject(response.body());
            System.out.println("approved: sender " + approved.getString("senderId") + " of channel " + approved.getLong("channelId"));
            return 0;
        }
    }
}
