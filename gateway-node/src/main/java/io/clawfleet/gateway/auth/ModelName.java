package io.clawfleet.gateway.auth;

import io.clawfleet.shared.store.BotRef;

import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The bot and model role that the {@code model} of an OpenAI-compatible request names: {@code "support/fast"} is bot
 * support's role fast; a name without a slash is a role of the default bot when it has one of that name
 * ({@code "default"}, {@code "fast"}), else a bot, in its role {@value #DEFAULT_ROLE} ({@code "support"}).
 */
public record ModelName(String botId, String role) {

    /** The role of a model that names only a bot. */
    public static final String DEFAULT_ROLE = "default";

    public ModelName {
        Objects.requireNonNull(botId);
        Objects.requireNonNull(role);
    }

    /** What {@code model} names, given the default bot's model roles. */
    public static ModelName parse(String model, Set<String> mainRoles) {
        return qualified(model).orElseGet(() -> mainRoles.contains(model)
                ? new ModelName(BotRef.MAIN, model) : new ModelName(model, DEFAULT_ROLE));
    }

    /** What {@code model} names when it names its bot itself ({@code "<bot>/<role>"}); empty when main's roles decide. */
    public static Optional<ModelName> qualified(String model) {
        int slash = model.indexOf('/');
        return slash < 0 ? Optional.empty() : Optional.of(new ModelName(model.substring(0, slash), model.substring(slash + 1)));
    }
}
