package io.clawfleet.deploy;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code clawfleet bots list|create|show|delete|providers}: a tenant's bots from the terminal, through
 * {@code /api/v1/bots} with a tenant key (issues 13 and 14). {@code providers} shows, sets (from a JSON file, as
 * {@code PUT /api/v1/bots/{botId}/providers} takes it) or removes a bot's own model providers.
 */
@Command(name = "bots", mixinStandardHelpOptions = true,
        description = "List, create, show and delete a tenant's bots, and set their model providers (needs a tenant key).",
        subcommands = {BotsCommand.ListBots.class, BotsCommand.Create.class, BotsCommand.Show.class, BotsCommand.Delete.class,
                BotsCommand.Providers.class})
final class BotsCommand implements Runnable {

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    /** Prints the answer's JSON (pretty) on success, the status and body on stderr otherwise. */
    static int print(HttpResponse<String> response, int expected, String command) {
        if (response.statusCode() != expected) {
            System.err.println("clawfleet bots " + command + ": " + response.statusCode() + " " + response.body());
            return 1;
        }
        System.out.println(response.body().isEmpty() ? "" : new JsonObject(response.body()).encodePrettily());
        return 0;
    }

    private static String bot(String id) {
        return "/api/v1/bots/" + TenantsCommand.encode(id);
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "List the tenant's bots (those the key reaches).")
    static final class ListBots implements Callable<Integer> {
        @Mixin
        GatewayConnection connection;

        @Option(names = "--limit", defaultValue = "100", description = "At most this many (default ${DEFAULT-VALUE}).")
        int limit;

        @Option(names = "--cursor", description = "Start after this bot id (the nextCursor of the page before).")
        String cursor;

        @Override
        public Integer call() throws Exception {
            String path = "/api/v1/bots?limit=" + limit + (cursor == null ? "" : "&cursor=" + TenantsCommand.encode(cursor));
            return print(connection.send("GET", path, null, "clawfleet-cli bots list"), 200, "list");
        }
    }

    @Command(name = "create", mixinStandardHelpOptions = true, description = "Create a bot, with its own workspace, settings and chats.")
    static final class Create implements Callable<Integer> {
        @Mixin
        GatewayConnection connection;

        @Parameters(index = "0", paramLabel = "BOT", description = "The bot's id (lower-case letters, digits, '-', '_').")
        String id;

        @Option(names = "--name", description = "The bot's name (default: its id).")
        String name;

        @Override
        public Integer call() throws Exception {
            JsonObject body = new JsonObject().put("id", id);
            if (name != null) {
                body.put("name", name);
            }
            return print(connection.send("POST", "/api/v1/bots", body.encode(), "clawfleet-cli bots create"), 201, "create");
        }
    }

    @Command(name = "show", mixinStandardHelpOptions = true, description = "Show a bot and its settings.")
    static final class Show implements Callable<Integer> {
        @Mixin
        GatewayConnection connection;

        @Parameters(index = "0", paramLabel = "BOT")
        String id;

        @Override
        public Integer call() throws Exception {
            return print(connection.send("GET", bot(id), null, "clawfleet-cli bots show"), 200, "show");
        }
    }

    @Command(name = "delete", mixinStandardHelpOptions = true,
            description = "Delete a bot with its workspace, chats, channels and tasks (the tenant's usage and audit stay).")
    static final class Delete implements Callable<Integer> {
        @Mixin
        GatewayConnection connection;

        @Parameters(index = "0", paramLabel = "BOT")
        String id;

        @Override
        public Integer call() throws Exception {
            HttpResponse<String> answer = connection.send("DELETE", bot(id), null, "clawfleet-cli bots delete");
            return print(answer, answer.statusCode() == 200 ? 200 : 202, "delete");
        }
    }

    @Command(name = "providers", mixinStandardHelpOptions = true,
            description = "Show a bot's model providers (keys as hints), set them from a JSON file, or remove them.")
    static final class Providers implements Callable<Integer> {
        @Mixin
        GatewayConnection connection;

        @Parameters(index = "0", paramLabel = "BOT", description = "The bot ('main' for the default one).")
        String id;

        @Option(names = "--set", paramLabel = "FILE",
                description = "A JSON file {\"providers\": {...}, \"roles\": {...}} (docs/TENANTS.md, Model providers).")
        Path file;

        @Option(names = "--remove", description = "Remove the bot's own providers: it uses the cluster's again.")
        boolean remove;

        @Override
        public Integer call() throws Exception {
            String path = bot(id) + "/providers";
            if (file != null && remove) {
                System.err.println("clawfleet bots providers: give --set FILE or --remove, not both");
                return 2;
            }
            if (remove) {
                HttpResponse<String> answer = connection.send("DELETE", path, null, "clawfleet-cli bots providers");
                return print(answer, 204, "providers --remove");
            }
            if (file == null) {
                return print(connection.send("GET", path, null, "clawfleet-cli bots providers"), 200, "providers");
            }
            String json;
            try {
                json = new JsonObject(Files.readString(file)).encode();
            } catch (DecodeException e) {
                System.err.println("clawfleet bots providers: " + file + " is not a JSON object: " + e.getMessage());
                return 2;
            }
            return print(connection.send("PUT", path, json, "clawfleet-cli bots providers"), 200, "providers --set");
        }
    }
}
