package io.clawfleet.shared.provider;

import io.clawfleet.shared.config.ClawfleetConfig.ModelProvider;
import io.clawfleet.shared.config.ClawfleetConfig.ProviderType;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The model providers a tenant gives one of its bots ({@code PUT /api/v1/bots/{botId}/providers}, issue 14): named
 * providers (API type, base URL, API key, model, limits, price) and roles, each a fallback chain of provider names,
 * as the operator's {@code llm.providers.*} and {@code llm.roles.*} are. The API keys are kept apart from the rest:
 * {@link #config()} is what is stored in the clear and shown (each key replaced by its hint), {@link #keys()} is what
 * is sealed.
 */
public record BotProviders(Map<String, Provider> providers, Map<String, List<String>> roles) {

    /** The role every bot has; messages that name none use it. */
    public static final String DEFAULT_ROLE = "default";
    public static final int MAX_PROVIDERS = 16;
    public static final int MAX_ROLES = 32;
    public static final int MAX_CHAIN = 8;
    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9_-]{0,31}");
    private static final Set<String> TOP_FIELDS = Set.of("providers", "roles");
    private static final Set<String> PROVIDER_FIELDS = Set.of("type", "baseUrl", "apiKey", "model", "timeoutMs", "maxRetries",
            "maxTokens", "price");
    private static final Set<String> PRICE_FIELDS = Set.of("input", "output", "cachedInput");
    private static final long RETRY_BACKOFF_MS = 500;

    public BotProviders {
        providers = Map.copyOf(providers);
        Map<String, List<String>> copy = new LinkedHashMap<>();
        roles.forEach((role, chain) -> copy.put(role, List.copyOf(chain)));
        roles = java.util.Collections.unmodifiableMap(copy);
    }

    /**
     * What a provider's tokens cost, in US dollars per million tokens (so also micro-dollars per token).
     *
     * @param cachedInput the price of input tokens read from the provider's prompt cache; null = the input price
     */
    public record Price(double input, double output, Double cachedInput) {

        /** The cost of one call in micro-dollars, rounded; {@code cached} is the part of {@code input} read from cache. */
        public long costMicros(long input, long output, long cached) {
            long fresh = Math.max(0, input - cached);
            double cachedPrice = cachedInput == null ? this.input : cachedInput;
            return Math.round(fresh * this.input + cached * cachedPrice + output * this.output);
        }

        JsonObject toJson() {
            JsonObject json = new JsonObject().put("input", input).put("output", output);
            if (cachedInput != null) {
                json.put("cachedInput", cachedInput);
            }
            return json;
        }
    }

    /**
     * One provider of a bot.
     *
     * @param apiKey     the key, in memory only after it was opened; null when the endpoint needs none
     * @param apiKeyHint what is shown of the key ({@code sk-…abcd}); null when there is none
     * @param price      null when the tenant gave none (usage then has no cost for its calls)
     */
    public record Provider(String name, ProviderType type, String baseUrl, String apiKey, String apiKeyHint, String model,
                           long timeoutMs, int maxRetries, int maxTokens, Price price) {

        public Provider {
            Objects.requireNonNull(name);
            Objects.requireNonNull(type);
            Objects.requireNonNull(baseUrl);
            Objects.requireNonNull(model);
        }

        /** As the worker's model clients take a provider. */
        public ModelProvider asModelProvider() {
            return new ModelProvider(name, type, baseUrl, apiKey, model, timeoutMs, maxRetries, RETRY_BACKOFF_MS, maxTokens);
        }

        JsonObject toJson() {
            JsonObject json = new JsonObject().put("type", type.id()).put("baseUrl", baseUrl).put("model", model)
                    .put("timeoutMs", timeoutMs).put("maxRetries", maxRetries).put("maxTokens", maxTokens);
            if (apiKeyHint != null) {
                json.put("apiKeyHint", apiKeyHint);
            }
            if (price != null) {
                json.put("price", price.toJson());
            }
            return json;
        }

        @Override
        public String toString() {
            return "Provider[name=" + name + ", type=" + type.id() + ", baseUrl=" + baseUrl + ", model=" + model
                    + ", apiKey=" + (apiKey == null ? "none" : "[redacted]") + "]";
        }
    }

    /**
     * Reads a bot's providers as a request gives them, checking every field; a provider given without
     * {@code apiKey} keeps the key {@code previous} has under its name (so what a GET shows can be sent back as it is).
     *
     * @param previous what the bot has now; null when it has none
     * @throws IllegalArgumentException naming the field that is wrong and why
     */
    public static BotProviders parse(JsonObject body, BotProviders previous) {
        unknown(body, TOP_FIELDS, "");
        JsonObject given = object(body, "providers", true);
        if (given.isEmpty() || given.size() > MAX_PROVIDERS) {
            throw new IllegalArgumentException("'providers' must name 1 to " + MAX_PROVIDERS + " providers, got " + given.size());
        }
        Map<String, Provider> providers = new LinkedHashMap<>();
        for (String name : given.fieldNames()) {
            String where = "providers." + name;
            if (!NAME.matcher(name).matches()) {
                throw new IllegalArgumentException("'" + where + "': a provider name is 1 to 32 of a-z, 0-9, '_' and '-', "
                        + "starting with a letter or digit");
            }
            if (!(given.getValue(name) instanceof JsonObject spec)) {
                throw new IllegalArgumentException("'" + where + "' must be an object");
            }
            Provider kept = previous == null ? null : previous.providers().get(name);
            providers.put(name, provider(name, spec, where, kept));
        }
        Map<String, List<String>> roles = roles(object(body, "roles", false), providers);
        return new BotProviders(providers, roles);
    }

    /** From storage: {@link #config()} as stored and the opened {@link #keys()} (null when there are none). */
    public static BotProviders stored(JsonObject config, JsonObject keys) {
        Map<String, Provider> providers = new LinkedHashMap<>();
        JsonObject given = config.getJsonObject("providers");
        for (String name : given.fieldNames()) {
            JsonObject spec = given.getJsonObject(name);
            JsonObject price = spec.getJsonObject("price");
            providers.put(name, new Provider(name, ProviderType.valueOf(spec.getString("type").toUpperCase(Locale.ROOT)),
                    spec.getString("baseUrl"), keys == null ? null : keys.getString(name), spec.getString("apiKeyHint"),
                    spec.getString("model"), spec.getLong("timeoutMs"), spec.getInteger("maxRetries"),
                    spec.getInteger("maxTokens"), price == null ? null : new Price(price.getDouble("input"),
                    price.getDouble("output"), price.getDouble("cachedInput"))));
        }
        Map<String, List<String>> roles = new LinkedHashMap<>();
        JsonObject givenRoles = config.getJsonObject("roles");
        for (String role : givenRoles.fieldNames()) {
            List<String> chain = new ArrayList<>();
            givenRoles.getJsonArray(role).forEach(name -> chain.add((String) name));
            roles.put(role, chain);
        }
        return new BotProviders(providers, roles);
    }

    /** Everything but the keys (each replaced by its hint): what is stored in the clear and what a GET shows. */
    public JsonObject config() {
        JsonObject providersJson = new JsonObject();
        providers.forEach((name, provider) -> providersJson.put(name, provider.toJson()));
        JsonObject rolesJson = new JsonObject();
        roles.forEach((role, chain) -> rolesJson.put(role, new JsonArray(chain)));
        return new JsonObject().put("providers", providersJson).put("roles", rolesJson);
    }

    /** The API keys by provider name, to be sealed; empty when no provider has one. */
    public JsonObject keys() {
        JsonObject keys = new JsonObject();
        providers.forEach((name, provider) -> {
            if (provider.apiKey() != null) {
                keys.put(name, provider.apiKey());
            }
        });
        return keys;
    }

    /** The prices of the providers that have one, by provider name. */
    public Map<String, Price> prices() {
        Map<String, Price> prices = new LinkedHashMap<>();
        providers.forEach((name, provider) -> {
            if (provider.price() != null) {
                prices.put(name, provider.price());
            }
        });
        return prices;
    }

    /** The providers' keys, so they can be cut out of whatever text might carry one. */
    public List<String> secrets() {
        return providers.values().stream().map(Provider::apiKey).filter(Objects::nonNull).toList();
    }

    /** What is shown of a key: its first three and last four characters when it is long enough, else nothing of it. */
    public static String hint(String key) {
        return key.length() >= 20 ? key.substring(0, 3) + "…" + key.substring(key.length() - 4) : "…";
    }

    private static Provider provider(String name, JsonObject spec, String where, Provider kept) {
        unknown(spec, PROVIDER_FIELDS, where + ".");
        String typeText = string(spec, "type", where, 16, true);
        ProviderType type = switch (typeText) {
            case "openai" -> ProviderType.OPENAI;
            case "anthropic" -> ProviderType.ANTHROPIC;
            default -> throw new IllegalArgumentException("'" + where + ".type' must be 'openai' (OpenAI Chat Completions and "
                    + "compatible APIs) or 'anthropic', got '" + typeText + "'");
        };
        String baseUrl = baseUrl(string(spec, "baseUrl", where, 2048, true), where + ".baseUrl");
        String model = string(spec, "model", where, 200, true);
        String apiKey = string(spec, "apiKey", where, 4096, false);
        if (apiKey != null && (apiKey.isBlank() || apiKey.chars().anyMatch(c -> c <= ' ' || c == 0x7f))) {
            throw new IllegalArgumentException("'" + where + ".apiKey' must not be blank or hold spaces or control characters");
        }
        String hint = apiKey == null ? null : hint(apiKey);
        if (apiKey == null && kept != null && kept.apiKey() != null) {
            apiKey = kept.apiKey(); // not sent again: the stored one stays
            hint = kept.apiKeyHint();
        }
        long timeoutMs = number(spec, "timeoutMs", where, 1_000, 600_000, 60_000);
        int maxRetries = (int) number(spec, "maxRetries", where, 0, 5, 2);
        int maxTokens = (int) number(spec, "maxTokens", where, 1, 200_000, 4_096);
        Price price = price(spec.getValue("price"), where + ".price");
        return new Provider(name, type, baseUrl, apiKey, hint, model, timeoutMs, maxRetries, maxTokens, price);
    }

    private static Map<String, List<String>> roles(JsonObject given, Map<String, Provider> providers) {
        Map<String, List<String>> roles = new LinkedHashMap<>();
        if (given == null || given.isEmpty()) {
            if (providers.size() != 1) {
                throw new IllegalArgumentException("'roles' is required with more than one provider: name the chain of the "
                        + "'default' role, e.g. {\"default\": [\"" + String.join("\", \"", providers.keySet()) + "\"]}");
            }
            roles.put(DEFAULT_ROLE, List.copyOf(providers.keySet()));
            return roles;
        }
        if (given.size() > MAX_ROLES) {
            throw new IllegalArgumentException("'roles' may name at most " + MAX_ROLES + " roles, got " + given.size());
        }
        if (!given.containsKey(DEFAULT_ROLE)) {
            throw new IllegalArgumentException("'roles' must include '" + DEFAULT_ROLE + "' (messages that name no role use it)");
        }
        for (String role : given.fieldNames()) {
            String where = "roles." + role;
            if (!NAME.matcher(role).matches()) {
                throw new IllegalArgumentException("'" + where + "': a role name is 1 to 32 of a-z, 0-9, '_' and '-'");
            }
            if (!(given.getValue(role) instanceof JsonArray chain) || chain.isEmpty() || chain.size() > MAX_CHAIN) {
                throw new IllegalArgumentException("'" + where + "' must be a list of 1 to " + MAX_CHAIN
                        + " provider names, tried in order");
            }
            List<String> names = new ArrayList<>();
            for (Object name : chain) {
                if (!(name instanceof String text) || !providers.containsKey(text)) {
                    throw new IllegalArgumentException("'" + where + "' names '" + name + "', which is not one of the providers ("
                            + String.join(", ", providers.keySet()) + ")");
                }
                if (names.contains(text)) {
                    throw new IllegalArgumentException("'" + where + "' names '" + text + "' twice");
                }
                names.add(text);
            }
            roles.put(role, names);
        }
        return roles;
    }

    /** An absolute http(s) URL without credentials, query or fragment, without a trailing slash. */
    static String baseUrl(String text, String where) {
        URI uri;
        try {
            uri = new URI(text);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("'" + where + "' is not a valid URL: " + e.getReason());
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("https") && !scheme.equals("http")) {
            throw new IllegalArgumentException("'" + where + "' must be an http or https URL, such as https://api.openai.com/v1");
        }
        if (uri.getHost() == null || uri.getHost().isEmpty()) {
            throw new IllegalArgumentException("'" + where + "' names no host");
        }
        if (uri.getRawUserInfo() != null || uri.getRawQuery() != null || uri.getRawFragment() != null) {
            throw new IllegalArgumentException("'" + where + "' must not hold credentials, a query or a fragment "
                    + "(give the key as apiKey)");
        }
        return text.replaceAll("/+$", "");
    }

    private static Price price(Object value, String where) {
        if (value == null) {
            return null;
        }
        if (!(value instanceof JsonObject price)) {
            throw new IllegalArgumentException("'" + where + "' must be an object such as {\"input\": 0.15, \"output\": 0.6} "
                    + "(US dollars per million tokens)");
        }
        unknown(price, PRICE_FIELDS, where + ".");
        double input = dollars(price, "input", where, true);
        double output = dollars(price, "output", where, true);
        Double cached = price.containsKey("cachedInput") ? dollars(price, "cachedInput", where, true) : null;
        return new Price(input, output, cached);
    }

    private static double dollars(JsonObject json, String field, String where, boolean required) {
        Object value = json.getValue(field);
        if (!(value instanceof Number number) || !Double.isFinite(number.doubleValue()) || number.doubleValue() < 0
                || number.doubleValue() > 10_000) {
            throw new IllegalArgumentException("'" + where + "." + field + "' must be a number of US dollars per million tokens, "
                    + "0 to 10000" + (value == null && required ? " (missing)" : ", got " + value));
        }
        return number.doubleValue();
    }

    private static void unknown(JsonObject json, Set<String> known, String prefix) {
        for (String field : json.fieldNames()) {
            if (!known.contains(field)) {
                throw new IllegalArgumentException("unknown field '" + prefix + field + "'; expected only "
                        + String.join(", ", new java.util.TreeSet<>(known)));
            }
        }
    }

    private static JsonObject object(JsonObject json, String field, boolean required) {
        Object value = json.getValue(field);
        if (value == null) {
            if (required) {
                throw new IllegalArgumentException("missing required field '" + field + "' (an object)");
            }
            return null;
        }
        if (!(value instanceof JsonObject object)) {
            throw new IllegalArgumentException("'" + field + "' must be an object");
        }
        return object;
    }

    private static String string(JsonObject json, String field, String where, int maxLength, boolean required) {
        Object value = json.getValue(field);
        if (value == null) {
            if (required) {
                throw new IllegalArgumentException("missing required field '" + where + "." + field + "' (a string)");
            }
            return null;
        }
        if (!(value instanceof String text) || text.isEmpty() || text.length() > maxLength) {
            throw new IllegalArgumentException("'" + where + "." + field + "' must be a string of 1 to " + maxLength + " characters");
        }
        return text;
    }

    private static long number(JsonObject json, String field, String where, long min, long max, long fallback) {
        Object value = json.getValue(field);
        if (value == null) {
            return fallback;
        }
        if (!(value instanceof Number number) || number.doubleValue() != Math.rint(number.doubleValue())
                || number.longValue() < min || number.longValue() > max) {
            throw new IllegalArgumentException("'" + where + "." + field + "' must be a whole number from " + min + " to " + max
                    + ", got " + value);
        }
        return number.longValue();
    }

    @Override
    public String toString() {
        return "BotProviders[providers=" + providers.values() + ", roles=" + roles + "]";
    }
}
