package io.clawfleet.shared.config;

import io.clawfleet.shared.config.ClawfleetConfig.Llm;
import io.clawfleet.shared.config.ClawfleetConfig.ModelProvider;
import io.clawfleet.shared.config.ClawfleetConfig.ProviderType;
import io.clawfleet.shared.provider.BotProviders.Price;

import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Reads the {@code llm} section: the default provider's keys, the named providers
 * ({@code llm.providers.<name>.<field>}) and the roles ({@code llm.roles.<role>}), and checks that
 * every role names providers that exist.
 */
final class LlmConfigReader {

    static final String PROVIDERS = "llm.providers";
    static final String ROLES = "llm.roles";
    /** The fields a named provider takes, in documentation order. */
    static final List<String> PROVIDER_FIELDS = List.of("type", "baseUrl", "apiKey", "model", "timeoutMs", "maxRetries",
            "retryBackoffMs", "maxTokens", "priceInput", "priceOutput", "priceCachedInput");
    /** Lower case so that the name maps to the environment and back unchanged. */
    private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9_]{0,31}");
    private static final String ANTHROPIC_URL = "https://api.anthropic.com";

    private LlmConfigReader() {
    }

    static Llm read(ConfigReader r) {
        ProviderType type = type(r, "llm.type");
        String baseUrl = url(r, "llm.baseUrl", null);
        String apiKey = r.string("llm.apiKey", null);
        String model = r.string("llm.model", "gpt-4o-mini");
        long timeoutMs = r.longValue("llm.timeoutMs", 60_000, 100, 3_600_000);
        int maxRetries = r.integer("llm.maxRetries", 3, 0, 20);
        long backoffMs = r.longValue("llm.retryBackoffMs", 500, 1, 60_000);
        int maxTokens = r.integer("llm.maxTokens", 4_096, 1, 1_000_000);
        int circuitFailures = r.integer("llm.circuitFailures", 5, 1, 1_000);
        long circuitCooldownMs = r.longValue("llm.circuitCooldownMs", 30_000, 0, 3_600_000);
        ModelProvider defaults = new ModelProvider(Llm.DEFAULT_PROVIDER, type, baseUrl, apiKey, model, timeoutMs, maxRetries,
                backoffMs, maxTokens);
        Map<String, ModelProvider> providers = providers(r, defaults);
        Map<String, List<String>> roles = roles(r, baseUrl != null, providers.keySet());
        Map<String, Price> prices = new LinkedHashMap<>();
        Price defaultPrice = price(r, "llm.");
        if (defaultPrice != null) {
            prices.put(Llm.DEFAULT_PROVIDER, defaultPrice);
        }
        for (String name : providers.keySet()) {
            Price price = price(r, PROVIDERS + "." + name + ".");
            if (price != null) {
                prices.put(name, price);
            }
        }
        return new Llm(type, baseUrl, apiKey, model, timeoutMs, maxRetries, backoffMs, maxTokens, circuitFailures,
                circuitCooldownMs, providers, roles, prices);
    }

    /**
     * A provider's price in US dollars per million tokens ({@code priceInput}, {@code priceOutput}, optional
     * {@code priceCachedInput}); null when it has none. Usage records each call's cost at it.
     */
    private static Price price(ConfigReader r, String prefix) {
        Double input = dollars(r, prefix + "priceInput");
        Double output = dollars(r, prefix + "priceOutput");
        Double cached = dollars(r, prefix + "priceCachedInput");
        if (input == null && output == null && cached == null) {
            return null;
        }
        if (input == null || output == null) {
            r.problem(prefix + (input == null ? "priceInput" : "priceOutput"), "a price needs both priceInput and priceOutput "
                    + "(US dollars per million tokens)");
            return null;
        }
        return new Price(input, output, cached);
    }

    private static Double dollars(ConfigReader r, String key) {
        String text = r.string(key, null);
        if (text == null) {
            return null;
        }
        try {
            double value = Double.parseDouble(text.strip());
            if (Double.isFinite(value) && value >= 0 && value <= 10_000) {
                return value;
            }
        } catch (NumberFormatException e) {
            // the problem below
        }
        r.problem(key, "expected US dollars per million tokens, 0 to 10000, such as 0.15; got '" + text + "'");
        return null;
    }

    private static Map<String, ModelProvider> providers(ConfigReader r, ModelProvider defaults) {
        r.hint(PROVIDERS + ".", "a provider takes " + String.join(", ", PROVIDER_FIELDS));
        Map<String, ModelProvider> providers = new LinkedHashMap<>();
        for (String name : r.namesUnder(PROVIDERS, PROVIDER_FIELDS)) {
            String key = PROVIDERS + "." + name;
            if (!NAME.matcher(name).matches()) {
                r.problemAt(key, "expected a provider name of 1-32 lowercase letters, digits and '_', starting with a letter, got '" + name + "'");
                r.ignoreUnder(key + ".");
            } else if (name.equals(Llm.DEFAULT_PROVIDER)) {
                r.problemAt(key, "the name 'default' belongs to the provider of llm.baseUrl, llm.model, ...; choose another name");
                r.ignoreUnder(key + ".");
            } else {
                providers.put(name, provider(r, key + ".", name, defaults));
            }
        }
        return providers;
    }

    private static ModelProvider provider(ConfigReader r, String prefix, String name, ModelProvider defaults) {
        ProviderType type = type(r, prefix + "type");
        String baseUrl = url(r, prefix + "baseUrl", type == ProviderType.ANTHROPIC ? ANTHROPIC_URL : null);
        if (baseUrl == null) {
            r.problem(prefix + "baseUrl", "expected the endpoint URL of provider '" + name + "', such as https://api.deepseek.com/v1");
        }
        String model = r.string(prefix + "model", null);
        if (model == null || model.isBlank()) {
            r.problem(prefix + "model", "expected the model name provider '" + name + "' is asked for, such as deepseek-chat or claude-sonnet-4-5");
        }
        return new ModelProvider(name, type, baseUrl, r.string(prefix + "apiKey", null), model,
                r.longValue(prefix + "timeoutMs", defaults.timeoutMs(), 100, 3_600_000),
                r.integer(prefix + "maxRetries", defaults.maxRetries(), 0, 20),
                r.longValue(prefix + "retryBackoffMs", defaults.retryBackoffMs(), 1, 60_000),
                r.integer(prefix + "maxTokens", defaults.maxTokens(), 1, 1_000_000));
    }

    private static Map<String, List<String>> roles(ConfigReader r, boolean hasDefaultProvider, Set<String> named) {
        Set<String> available = new LinkedHashSet<>();
        if (hasDefaultProvider) {
            available.add(Llm.DEFAULT_PROVIDER);
        }
        available.addAll(named);
        Map<String, List<String>> roles = new LinkedHashMap<>();
        Set<String> names = r.namesUnder(ROLES, List.of());
        for (String role : names) {
            String key = ROLES + "." + role;
            if (!NAME.matcher(role).matches()) {
                r.problemAt(key, "expected a role name of 1-32 lowercase letters, digits and '_', starting with a letter, got '" + role + "'");
                continue;
            }
            List<String> chain = r.list(key, List.of());
            List<String> unknown = chain.stream().filter(p -> !available.contains(p)).toList();
            if (chain.isEmpty()) {
                r.problem(key, "expected the providers role '" + role + "' tries, in order, such as " + example(available));
            } else if (!unknown.isEmpty()) {
                r.problem(key, "role '" + role + "' names unknown provider(s) " + String.join(", ", unknown)
                        + "; configured: " + (available.isEmpty() ? "none" : String.join(", ", available)));
            } else {
                roles.put(role, chain);
            }
        }
        if (names.contains(Llm.DEFAULT_ROLE)) {
            roles.putIfAbsent(Llm.DEFAULT_ROLE, List.of()); // it was invalid, and reported
        } else {
            if (hasDefaultProvider) {
                roles.put(Llm.DEFAULT_ROLE, List.of(Llm.DEFAULT_PROVIDER));
            } else if (named.size() <= 1) {
                roles.put(Llm.DEFAULT_ROLE, List.copyOf(named)); // empty: no model, replies say so
            } else {
                r.problem(ROLES + "." + Llm.DEFAULT_ROLE, "expected the providers the default role tries, in order, such as "
                        + example(available) + ": several providers are configured and llm.baseUrl is not");
            }
        }
        return roles;
    }

    private static String example(Set<String> available) {
        return available.isEmpty() ? "[deepseek, claude]" : "[" + String.join(", ", available) + "]";
    }

    private static ProviderType type(ConfigReader r, String key) {
        String text = r.string(key, "openai");
        try {
            return ProviderType.valueOf(text.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            r.problem(key, "expected openai or anthropic, got '" + text + "'");
            return ProviderType.OPENAI;
        }
    }

    private static String url(ConfigReader r, String key, String defaultValue) {
        String url = r.string(key, defaultValue);
        if (url != null && !url.matches("(?i)https?://.+")) {
            r.problem(key, "expected an http:// or https:// URL such as https://api.openai.com/v1, got '" + url + "'");
        }
        return url;
    }
}
