package io.clawfleet.deploy;

import picocli.CommandLine.Option;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;

/** {@code --bot BOT}: which of the tenant's bots a command works on (default {@code main}, the paths without a bot). */
final class BotOption {

    @Option(names = "--bot", defaultValue = "main", paramLabel = "BOT",
            description = "The tenant's bot to work on (default ${DEFAULT-VALUE}).")
    String bot = "main";

    /** The prefix of the bot's routes: {@code /api/v1} for main, {@code /api/v1/bots/BOT} for any other. */
    String api() {
        return "main".equals(bot) ? "/api/v1" : "/api/v1/bots/" + URLEncoder.encode(bot, StandardCharsets.UTF_8);
    }
}
