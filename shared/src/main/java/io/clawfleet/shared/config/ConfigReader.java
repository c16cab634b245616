package io.clawfleet.shared.config;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * Reads typed values by key from, in order of precedence: explicit overrides (command-line flags),
 * environment variables ({@code CLAWFLEET_} + the key in upper snake case), the YAML file, and the
 * default. Problems are collected, not thrown one at a time, so a user fixes them in one go.
 */
final class ConfigReader {

    private record Raw(Object value, String origin) {
    }

    private final Map<String, Object> file;
    private final Map<String, String> env;
    private final Map<String, String> overrides;
    private final List<String> problems = new ArrayList<>();
    private final Set<String> known = new LinkedHashSet<>();
    private final Set<String> ignoredPrefixes = new LinkedHashSet<>();
    private final Map<String, String> hints = new java.util.LinkedHashMap<>();

    ConfigReader(Map<String, Object> flatFile, Map<String, String> env, Map<String, String> overrides) {
        this.file = new TreeMap<>(flatFile);
        this.env = Map.copyOf(env);
        this.overrides = Map.copyOf(overrides);
    }

    /** {@code http.maxBodyBytes} becomes {@code CLAWFLEET_HTTP_MAX_BODY_BYTES}. */
    static String envName(String key) {
        StringBuilder out = new StringBuilder("CLAWFLEET_");
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (c == '.') {
                out.append('_');
            } else if (Character.isUpperCase(c)) {
                out.append('_').append(c);
            } else {
                out.append(Character.toUpperCase(c));
            }
        }
        return out.toString();
    }

    Set<String> knownKeys() {
        return known;
    }

    List<String> problems() {
        return problems;
    }

    void problem(String key, String message) {
        problems.add(key + " (" + envName(key) + "): " + message);
    }

    /** A problem where no single key is to blame, e.g. an environment variable of the wrong shape. */
    void problemAt(String where, String message) {
        problems.add(where + ": " + message);
    }

    /** File keys that no reader asked for: almost always a typo the user wants to hear about. */
    void reportUnknownFileKeys() {
        for (String key : file.keySet()) {
            if (!known.contains(key) && ignoredPrefixes.stream().noneMatch(key::startsWith)) {
                String hint = hints.entrySet().stream().filter(h -> key.startsWith(h.getKey())).map(h -> " (" + h.getValue() + ")")
                        .findFirst().orElse("");
                problems.add("unknown configuration key '" + key + "' in the config file" + hint);
            }
        }
    }

    /** Adds {@code hint} to the report of an unknown file key starting with {@code prefix}. */
    void hint(String prefix, String hint) {
        hints.put(prefix, hint);
    }

    /** File keys under {@code prefix} are not reported as unknown (their problem was reported already). */
    void ignoreUnder(String prefix) {
        ignoredPrefixes.add(prefix);
    }

    /**
     * The entry names under a map-like key, from every source, sorted: {@code llm.providers.claude.model}
     * in the file or on the command line and {@code CLAWFLEET_LLM_PROVIDERS_CLAUDE_MODEL} in the
     * environment all name {@code claude}. With {@code fields}, entries are {@code <prefix>.<name>.<field>}
     * and an environment variable must end in a field's upper snake case (the longest that fits wins; one
     * that fits none is reported); without, entries are {@code <prefix>.<name>}. Names from the environment
     * are lower-cased.
     */
    Set<String> namesUnder(String prefix, List<String> fields) {
        Set<String> names = new java.util.TreeSet<>();
        for (String key : concat(file.keySet(), overrides.keySet())) {
            if (key.startsWith(prefix + ".")) {
                String rest = key.substring(prefix.length() + 1);
                int dot = rest.indexOf('.');
                if (fields.isEmpty() || dot > 0) {
                    names.add(dot > 0 ? rest.substring(0, dot) : rest);
                }
            }
        }
        String envPrefix = envName(prefix) + "_";
        for (Map.Entry<String, String> entry : env.entrySet()) {
            if (!entry.getKey().startsWith(envPrefix) || entry.getValue() == null || entry.getValue().isEmpty()) {
                continue;
            }
            String rest = entry.getKey().substring(envPrefix.length());
            String name = fields.isEmpty() ? rest : envEntryName(rest, fields);
            if (name == null || name.isEmpty()) {
                problemAt("env " + entry.getKey(), fields.isEmpty() ? "expected " + envPrefix + "<NAME>"
                        : "expected " + envPrefix + "<NAME>_<FIELD> with FIELD one of "
                        + String.join(", ", fields.stream().map(ConfigReader::envSuffix).toList()));
            } else {
                names.add(name.toLowerCase(Locale.ROOT));
            }
        }
        return names;
    }

    private static String envEntryName(String rest, List<String> fields) {
        String best = null;
        for (String field : fields) {
            String suffix = "_" + envSuffix(field);
            if (rest.endsWith(suffix) && rest.length() > suffix.length() && (best == null || suffix.length() > best.length())) {
                best = suffix;
            }
        }
        return best == null ? null : rest.substring(0, rest.length() - best.length());
    }

    /** {@code apiKey} becomes {@code API_KEY}. */
    private static String envSuffix(String field) {
        return envName(field).substring("CLAWFLEET_".length());
    }

    private static List<String> concat(Set<String> a, Set<String> b) {
        List<String> out = new ArrayList<>(a);
        out.addAll(b);
        return out;
    }

    private Optional<Raw> raw(String key) {
        known.add(key);
        if (overrides.containsKey(key)) {
            return Optional.of(new Raw(overrides.get(key), "command line"));
        }
        String envValue = env.get(envName(key));
        if (envValue != null && !envValue.isEmpty()) {
            return Optional.of(new Raw(envValue, "env " + envName(key)));
        }
        if (file.containsKey(key) && file.get(key) != null) {
            return Optional.of(new Raw(file.get(key), "file"));
        }
        return Optional.empty();
    }

    String string(String key, String defaultValue) {
        return raw(key).map(r -> r.value().toString().trim()).orElse(defaultValue);
    }

    int integer(String key, int defaultValue, int min, int max) {
        return (int) longValue(key, defaultValue, min, max);
    }

    long longValue(String key, long defaultValue, long min, long max) {
        return parsed(key, defaultValue, text -> {
            long value = Long.parseLong(text.replace("_", ""));
            if (value < min || value > max) {
                throw new IllegalArgumentException();
            }
            return value;
        }, "an integer from " + min + " to " + max);
    }

    /** A decimal number such as {@code 7} or {@code 0.25}, within [min, max], or exactly {@code zero} when allowed. */
    double decimal(String key, double defaultValue, double min, double max, boolean zeroAllowed) {
        return parsed(key, defaultValue, text -> {
            double value = Double.parseDouble(text.replace("_", ""));
            if (!(zeroAllowed && value == 0) && !(value >= min && value <= max)) {
                throw new IllegalArgumentException();
            }
            return value;
        }, "a number from " + plain(min) + " to " + plain(max) + (zeroAllowed ? ", or 0" : ""));
    }

    private static String plain(double value) {
        return java.math.BigDecimal.valueOf(value).stripTrailingZeros().toPlainString();
    }

    boolean bool(String key, boolean defaultValue) {
        return parsed(key, defaultValue, text -> switch (text.toLowerCase(Locale.ROOT)) {
            case "true", "yes", "on", "1" -> true;
            case "false", "no", "off", "0" -> false;
            default -> throw new IllegalArgumentException();
        }, "true or false");
    }

    /** A YAML list, or a comma-separated string (the only form an environment variable has). */
    List<String> list(String key, List<String> defaultValue) {
        Optional<Raw> raw = raw(key);
        if (raw.isEmpty()) {
            return defaultValue;
        }
        Object value = raw.get().value();
        List<String> out = new ArrayList<>();
        if (value instanceof List<?> items) {
            items.forEach(item -> out.add(String.valueOf(item).trim()));
        } else {
            for (String part : value.toString().split(",")) {
                out.add(part.trim());
            }
        }
        out.removeIf(String::isEmpty);
        return List.copyOf(out);
    }

    private <T> T parsed(String key, T defaultValue, Function<String, T> parser, String expected) {
        Optional<Raw> raw = raw(key);
        if (raw.isEmpty()) {
            return defaultValue;
        }
        String text = raw.get().value().toString().trim();
        try {
            return parser.apply(text);
        } catch (RuntimeException e) {
            problem(key, "expected " + expected + ", got '" + text + "' (from " + raw.get().origin() + ")");
            return defaultValue;
        }
    }
}
