package io.clawfleet.deploy;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code clawfleet admin grant|revoke --chat CHANNEL:CHAT}: the operator makes a chat an admin chat (or a
 * normal one again). The only way to the first admin chat: no key is ever typed into a chat.
 */
@Command(name = "admin", mixinStandardHelpOptions = true,
        description = "Grant or revoke a chat's admin role (admin chats may change the bot and run risky tools).",
        subcommands = {AdminCommand.Grant.class, AdminCommand.Revoke.class})
final class AdminCommand implements Runnable {

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    static int setRole(GatewayConnection connection, BotOption bot, String chat, String role) throws Exception {
        return setRole(connection, bot, chat, role, List.of());
    }

    static int setRole(GatewayConnection connection, BotOption bot, String chat, String role, List<String> senders)
            throws Exception {
        int colon = chat.indexOf(':');
        if (colon <= 0 || colon == chat.length() - 1) {
            System.err.println("clawfleet admin: --chat must be CHANNEL:CHAT_ID, like telegram:123456 or api:alice, got '" + chat + "'");
            return 2;
        }
        String path = bot.api() + "/chats/" + encode(chat.substring(0, colon)) + "/" + encode(chat.substring(colon + 1)) + "/role";
        // Audited by the gateway (role_change and http_write rows), naming this command as the client.
        HttpResponse<String> response = connection.send("PUT", path, senders.isEmpty()
                ? new JsonObject().put("role", role).encode()
                : new JsonObject().put("role", role).put("senders", new JsonArray(senders)).encode(),
                "clawfleet-cli admin " + ("admin".equals(role) ? "grant" : "revoke"));
        if (response.statusCode() != 200) {
            System.err.println("clawfleet admin: " + response.statusCode() + " " + response.body());
            return 1;
        }
        System.out.println("chat " + chat + " is now " + role + (senders.isEmpty() ? "" : " for senders " + senders));
        return 0;
    }

    private static String encode(String part) {
        return URLEncoder.encode(part, StandardCharsets.UTF_8).replace("+", "%20");
    }

    @Command(name = "grant", mixinStandardHelpOptions = true, description = "Make a chat an admin chat.")
    static final class Grant implements Callable<Integer> {
        @Mixin
        GatewayConnection connection;

        @Mixin
        BotOption bot;

        @Option(names = "--chat", required = true, description = "The chat, CHANNEL:CHAT_ID (telegram:123456, api:alice).")
        String chat;

        @Option(names = "--sender", paramLabel = "ID",
                description = "A sender who acts as admin in the chat (repeat for several); required for a group chat, "
                        + "where admin is a property of the sender. Without it every sender of the chat is admin.")
        List<String> senders = List.of();

        @Override
        public Integer call() throws Exception {
            return setRole(connection, bot, chat, "admin", senders);
        }
    }

    @Command(name = "revoke", mixinStandardHelpOptions = true, description = "Make an admin chat a normal chat again.")
    static final class Revoke implements Callable<Integer> {
        @Mixin
        GatewayConnection connection;

        @Mixin
        BotOption bot;

        @Option(names = "--chat", required = true, description = "The chat, CHANNEL:CHAT_ID.")
        String chat;

        @Override
        public Integer call() throws Exception {
            return setRole(connection, bot, chat, "normal");
        }
    }
}
