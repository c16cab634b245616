package io.clawfleet.deploy;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.net.http.HttpResponse;
import java.util.concurrent.Callable;

/** {@code clawfleet dead-letters list|replay}: the dead-letter API from the terminal. */
@Command(name = "dead-letters", mixinStandardHelpOptions = true,
        description = "List dead letters (work that failed for good) and replay them.",
        subcommands = {DeadLettersCommand.ListCommand.class, DeadLettersCommand.ReplayCommand.class})
final class DeadLettersCommand implements Runnable {

    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "List the tenant's dead letters, oldest first.")
    static final class ListCommand implements Callable<Integer> {
        @Mixin
        GatewayConnection connection;

        @Option(names = "--after", defaultValue = "0", description = "Only ids above this (default ${DEFAULT-VALUE}).")
        long after;

        @Option(names = "--limit", defaultValue = "100", description = "At most this many (default ${DEFAULT-VALUE}).")
        int limit;

        @Override
        public Integer call() throws Exception {
            HttpResponse<String> response = connection.send("GET", "/api/v1/dead-letters?after=" + after + "&limit=" + limit);
            if (response.statusCode() != 200) {
                System.err.println("clawfleet dead-letters: " + response.statusCode() + " " + response.body());
                return 1;
            }
            JsonArray letters = new JsonObject(response.body()).getJsonArray("deadLetters");
            if (letters.isEmpty()) {
                System.out.println("no dead letters");
            }
            for (int i = 0; i < letters.size(); i++) {
                JsonObject letter = letters.getJsonObject(i);
                System.out.printf("%d  %s  %s  %s%s%n    %s%n", letter.getLong("id"), letter.getString("createdAt"),
                        letter.getString("kind"), letter.getString("chatId", letter.getString("refId")),
                        letter.getString("replayedAt") == null ? "" : "  (replayed " + letter.getString("replayedAt") + ")",
                        letter.getString("error"));
            }
            return 0;
        }
    }

    @Command(name = "replay", mixinStandardHelpOptions = true,
            description = "Replay a dead letter: a failed message is sent into its chat again; an undeliverable reply is queued again.")
    static final class ReplayCommand implements Callable<Integer> {
        @Mixin
        GatewayConnection connection;

        @Parameters(paramLabel = "ID", description = "Dead letter id (from 'list').")
        long id;

        @Override
        public Integer call() throws Exception {
            HttpResponse<String> response = connection.send("POST", "/api/v1/dead-letters/" + id + "/replay");
            if (response.statusCode() != 202) {
                System.err.println("clawfleet dead-letters: " + response.statusCode() + " " + response.body());
                return 1;
            }
            System.out.println("replayed: " + response.body());
            return 0;
        }
    }
}
