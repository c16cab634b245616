package io.clawfleet.deploy;

import io.vertx.core.json.DecodeException;
import io.vertx.core.json.JsonObject;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.stream.IntStream;

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

    private static String bot(String id) {
        return "/api/v1/bots/" + TenantsCommand.encode(id);
    }

    /** A subcommand of {@code bots}: requests with a tenant key, each answer printed. */
    abstract static class BotsRequest implements Callable<Integer> {
        @Mixin
        GatewayConnection connection;

        @Spec
        CommandSpec spec;

        /**
         * Sends one request as {@code clawfleet-cli bots NAME} and, when its status is one of {@code expected}, prints
         * the answer's JSON (pretty): exit 0. Otherwise the status and body go to stderr, after {@code clawfleet bots
         * SHOWN}: exit 1.
         */
        int send(String method, String path, String json, String shown, int... expected)
                throws IOException, InterruptedException {
            HttpResponse<String> answer = connection.send(method, path, json, "clawfleet-cli bots " + spec.name());
            if (IntStream.of(expected).noneMatch(status -> status == answer.statusCode())) {
                System.err.println("clawfleet bots " + shown + ": " + answer.statusCode() + " " + answer.body());
                return 1;
            }
            System.out.println(answer.body().isEmpty() ? "" : new JsonObject(answer.body()).encodePrettily());
            return 0;
        }

        /** Says on stderr why the command's arguments cannot be used: exit 2. */
        int misused(String problem) {
            System.err.println("clawfleet bots " + spec.name() + ": " + problem);
            return 2;
        }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "List the tenant's bots (those the key reaches).")
    static final class ListBots extends BotsRequest {
        @Option(names = "--limit", defaultValue = "100", description = "At most this many (default ${DEFAULT-VALUE}).")
        int limit;

        @Option(names = "--cursor", description = "Start after this bot id (the nextCursor of the page before).")
        String cursor;

        @Override
        public Integer call() throws Exception {
            String path = "/api/v1/bots?limit=" + limit + (cursor == null ? "" : "&cursor=" + TenantsCommand.encode(cursor));
            return send("GET", path, null, "list", 200);
        }
    }

    @Command(name = "create", mixinStandardHelpOptions = true, description = "Create a bot, with its own workspace, settings and chats.")
    static final class Create extends BotsRequest {
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
            return send("POST", "/api/v1/bots", body.encode(), "create", 201);
        }
    }

    @Command(name = "show", mixinStandardHelpOptions = true, description = "Show a bot and its settings.")
    static final class Show extends BotsRequest {
        @Parameters(index = "0", paramLabel = "BOT")
        String id;

        @Override
        public Integer call() throws Exception {
            return send("GET", bot(id), null, "show", 200);
        }
    }

    @Command(name = "delete", mixinStandardHelpOptions = true,
            description = "Delete a bot with its workspace, chats, channels and tasks (the tenant's usage and audit stay).")
    static final class Delete extends BotsRequest {
        @Parameters(index = "0", paramLabel = "BOT")
        String id;

        @Override
        public Integer call() throws Exception {
            return send("DELETE", bot(id), null, "delete", 200, 202);
        }
    }

    @Command(name = "providers", mixinStandardHelpOptions = true,
            description = "Show a bot's model providers (keys as hints), set them from a JSON file, or remove them.")
    static final class Providers extends BotsRequest {
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
                return misused("give --set FILE or --remove, not both");
            }
            if (remove) {
                return send("DELETE", path, null, "providers --remove", 204);
            }
            if (file == null) {
                return send("GET", path, null, "providers", 200);
            }
            String json;
            try {
                json = new JsonObject(Files.readString(file)).encode();
            } catch (DecodeException e) {
                return misused(file + " is not a JSON object: " + e.getMessage());
            }
            return send("PUT", path, json, "providers --set", 200);
        }
    }
}
