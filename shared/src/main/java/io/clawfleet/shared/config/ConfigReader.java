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

    /** File keys that no reader asked for: almost always a typo the user wants to hear about. */
    void reportUnknownFileKeys() {
        for (String key : file.keySet()) {
            if (!known.contains(key)) {
                problems.add("unknown configuration key '" + key + "' in the config file");
            }
        }
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
