package io.clawfleet.worker.llm;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ClawfleetConfig.ModelProvider;
import io.clawfleet.shared.security.EgressGuard;
import io.vertx.core.Vertx;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Builds a worker's model providers and its {@link ModelRouter} from the configuration. */
public final class LlmProviders {

    /** The provider that answers when no model is configured. */
    public static final String OFFLINE = "offline";

    private LlmProviders() {
    }

    /**
     * The router over every configured provider (the {@code default} one of the {@code llm.*} keys and
     * the named ones) with the configured roles; without any model, the default role answers with
     * {@link OfflineProvider}.
     */
    public static ModelRouter router(Vertx vertx, ClawfleetConfig.Llm llm) {
        Map<String, LlmProvider> providers = new LinkedHashMap<>();
        ModelProvider defaultProvider = llm.defaultProvider();
        if (defaultProvider != null) {
            providers.put(defaultProvider.name(), provider(vertx, defaultProvider));
        }
        llm.providers().values().forEach(p -> providers.put(p.name(), provider(vertx, p)));
        Map<String, List<String>> roles = new LinkedHashMap<>(llm.roles());
        if (!llm.configured()) {
            providers.put(OFFLINE, new OfflineProvider());
            roles.put(ModelRouter.DEFAULT_ROLE, List.of(OFFLINE));
        }
        // A monotonic clock: a wall-clock step must not reopen or hold a circuit.
        return new ModelRouter(providers, roles, llm.circuitFailures(), llm.circuitCooldownMs(),
                () -> System.nanoTime() / 1_000_000);
    }

    /** One provider speaking the configured API. */
    public static LlmProvider provider(Vertx vertx, ModelProvider config) {
        return provider(vertx, config, null);
    }

    /**
     * One provider speaking the configured API.
     *
     * @param egress where the endpoint may lead, checked at each connection (a tenant's provider); null for the operator's
     */
    public static LlmProvider provider(Vertx vertx, ModelProvider config, EgressGuard egress) {
        LlmEndpoint endpoint = new LlmEndpoint(config.name(), config.baseUrl(), config.apiKey(), config.model(),
                config.timeoutMs(), config.maxRetries(), config.retryBackoffMs(), config.maxTokens());
        return switch (config.type()) {
            case OPENAI -> new OpenAiCompatibleProvider(vertx, endpoint, egress);
            case ANTHROPIC -> new AnthropicProvider(vertx, endpoint, egress);
        };
    }
}
