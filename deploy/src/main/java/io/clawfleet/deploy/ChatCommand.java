package io.clawfleet.deploy;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/** A terminal client for a running gateway. */
@Command(name = "chat", mixinStandardHelpOptions = true, description = "Chat with a running Clawfleet gateway in the terminal.")
final class ChatCommand implements Callable<Integer> {

    @Option(names = "--url", defaultValue = "http://127.0.0.1:8080", description = "Gateway URL (default ${DEFAULT-VALUE}).")
    String url;

    @Option(names = "--chat", description = "Chat id (default cli-<your user name>).")
    String chat;

    @Option(names = "--api-key", description = "Tenant API key (default: env CLAWFLEET_API_KEY, else .clawfleet/api-key).")
    String apiKey;

    @Option(names = "--data-dir", defaultValue = ".clawfleet", description = "Where 'up' keeps its key (default ${DEFAULT-VALUE}).")
    Path dataDir;

    @Override
    public Integer call() throws Exception {
        String key = apiKey != null ? apiKey : System.getenv("CLAWFLEET_API_KEY");
        Path keyFile = dataDir.resolve(UpCommand.API_KEY_FILE);
        if (key == null && Files.isReadable(keyFile)) {
            key = Files.readString(keyFile).strip();
        }
        if (key == null || key.isBlank()) {
            System.err.println("clawfleet chat: no API key; pass --api-key, set CLAWFLEET_API_KEY, or run from the folder where 'up' ran");
            return 2;
        }
        String chatId = chat != null ? chat : "cli-" + System.getProperty("user.name", "user");
        new ChatClient(url, key, chatId, System.getProperty("user.name", "user"))
                .run(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)), System.out);
        return 0;
    }
}
