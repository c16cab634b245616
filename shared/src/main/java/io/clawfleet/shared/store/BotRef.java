package io.clawfleet.shared.store;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * One bot of one tenant: what owns a workspace, settings, channels, tasks and chats. Every tenant has the
 * bot {@value #MAIN}, which the paths without a bot ({@code /api/v1/messages}, ...) address.
 */
public record BotRef(String tenantId, String botId) {

    /** The default bot every tenant has; it cannot be deleted. */
    public static final String MAIN = "main";
    /** Bot ids: lower-case letters, digits, '-' and '_', starting with a letter or digit, at most 63 characters. */
    public static final Pattern ID = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");

    public BotRef {
        Objects.requireNonNull(tenantId, "tenantId");
        botId = botId == null ? MAIN : botId;
    }

    public static BotRef main(String tenantId) {
        return new BotRef(tenantId, MAIN);
    }

    public boolean isMain() {
        return MAIN.equals(botId);
    }

    @Override
    public String toString() {
        return tenantId + "/" + botId;
    }
}
