package io.clawfleet.deploy;

import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Reading the deployment files as parsed YAML trees (maps, lists, scalars): Kubernetes documents and the Compose
 * file. A missing or differently shaped node reads as empty, so that a check states what it expected.
 */
final class YamlTree {

    private YamlTree() {
    }

    /** SnakeYAML, which resolves the anchors and merge keys the Compose file uses. */
    static Yaml yaml() {
        return new Yaml(new SafeConstructor(new LoaderOptions()));
    }

    static String kind(Map<String, Object> document) {
        return (String) document.get("kind");
    }

    static String name(Map<String, Object> document) {
        return (String) map(document.get("metadata")).get("name");
    }

    /** The node at {@code keys} below {@code start}, or null. */
    static Object path(Map<String, Object> start, String... keys) {
        Object at = start;
        for (String key : keys) {
            if (!(at instanceof Map<?, ?> m)) {
                return null;
            }
            at = m.get(key);
        }
        return at;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object value) {
        return value instanceof Map<?, ?> ? (Map<String, Object>) value : Map.of();
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Object value) {
        return value instanceof List<?> ? (List<Object>) value : List.of();
    }

    static List<Map<String, Object>> maps(Object value) {
        return list(value).stream().map(YamlTree::map).toList();
    }

    /** Whether a label selector (matchLabels, matchExpressions) selects pods with these labels. */
    static boolean selects(Map<String, Object> selector, Map<String, String> labels) {
        for (var entry : map(selector.get("matchLabels")).entrySet()) {
            if (!Objects.equals(labels.get(entry.getKey()), String.valueOf(entry.getValue()))) {
                return false;
            }
        }
        for (Map<String, Object> expression : maps(selector.get("matchExpressions"))) {
            String value = labels.get((String) expression.get("key"));
            List<Object> values = list(expression.get("values"));
            boolean match = switch ((String) expression.get("operator")) {
                case "In" -> value != null && values.contains(value);
                case "NotIn" -> value == null || !values.contains(value);
                case "Exists" -> value != null;
                case "DoesNotExist" -> value == null;
                default -> throw new AssertionError("unknown selector operator in " + expression);
            };
            if (!match) {
                return false;
            }
        }
        return true;
    }
}
