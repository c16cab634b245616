package io.clawfleet.shared.workspace;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.clawfleet.shared.store.WorkspaceFile;
import org.slf4j.Logger;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Reads {@code SKILL.md} files (seed 000 §9.2): a YAML frontmatter between {@code ---} lines with
 * {@code name}, {@code description}, optional {@code always}, {@code requires} (env, bins) and
 * {@code tools}, then a markdown body. Every error names the file and what is wrong with it.
 */
public final class SkillParser {

    /** The skills of a workspace, and the SKILL.md files that were skipped because they are invalid. */
    public record SkillSet(List<Skill> skills, List<Problem> problems) {
        public SkillSet {
            skills = List.copyOf(skills);
            problems = List.copyOf(problems);
        }
    }

    /** Why one SKILL.md was skipped. */
    public record Problem(String path, String message) {
    }

    public static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9-]{0,63}");
    public static final int MAX_DESCRIPTION = 1_024;
    public static final int MAX_FRONTMATTER = 16_384;

    private static final Logger LOG = LoggerFactory.getLogger(SkillParser.class);
    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");
    private static final ObjectMapper YAML = YAMLMapper.builder()
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .build();

    private SkillParser() {
    }

    /**
     * Parses one SKILL.md.
     *
     * @param path its workspace path; when it is {@code skills/<folder>/SKILL.md} the name must equal the folder
     * @throws IllegalArgumentException naming the file and the problem
     */
    public static Skill parse(String path, String text) {
        String where = path == null ? "SKILL.md" : path;
        if (text == null) {
            throw new IllegalArgumentException(where + ": the file has no content");
        }
        String[] parts = split(where, text);
        JsonNode root = yaml(where, parts[0]);
        String name = requiredString(where, root, "name");
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException(where + ": name '" + name
                    + "' must be lowercase letters, digits and '-', start with a letter or digit, at most 64 characters ("
                    + NAME.pattern() + ")");
        }
        if (path != null && WorkspacePaths.isSkillFile(path)) {
            String folder = path.split("/")[1];
            if (!folder.equals(name)) {
                throw new IllegalArgumentException(where + ": name '" + name + "' does not match its folder '" + folder
                        + "'; rename one of them");
            }
        }
        String description = requiredString(where, root, "description");
        if (description.length() > MAX_DESCRIPTION) {
            throw new IllegalArgumentException(where + ": description is longer than " + MAX_DESCRIPTION
                    + " characters; it goes into every prompt, keep it to a sentence");
        }
        List<String> env = new ArrayList<>();
        List<String> bins = new ArrayList<>();
        requires(where, root.get("requires"), env, bins);
        return new Skill(name, description, bool(where, root.get("always")), env, bins,
                strings(where, "tools", root.get("tools")), parts[1], where);
    }

    /** The valid skills among {@code files} ({@code skills/*}{@code /SKILL.md}), sorted by name; invalid ones are logged and skipped. */
    public static List<Skill> skills(Collection<WorkspaceFile> files) {
        SkillSet set = scan(files);
        for (Problem problem : set.problems()) {
            LOG.warn("invalid skill skipped [path: {}]: {}", problem.path(), problem.message());
        }
        return set.skills();
    }

    /** Like {@link #skills} but hands the problems back instead of logging them. */
    public static SkillSet scan(Collection<WorkspaceFile> files) {
        List<Skill> skills = new ArrayList<>();
        List<Problem> problems = new ArrayList<>();
        for (WorkspaceFile file : files) {
            if (!WorkspacePaths.isSkillFile(file.path())) {
                continue;
            }
            try {
                skills.add(parse(file.path(), file.content()));
            } catch (IllegalArgumentException e) {
                problems.add(new Problem(file.path(), e.getMessage()));
            }
        }
        skills.sort(Comparator.comparing(Skill::name));
        problems.sort(Comparator.comparing(Problem::path));
        return new SkillSet(skills, problems);
    }

    /** [frontmatter, body]. */
    static String[] split(String where, String text) {
        String s = text.startsWith("\uFEFF") ? text.substring(1) : text;
        int firstEnd = lineEnd(s, 0);
        if (!s.substring(0, firstEnd).strip().equals("---")) {
            throw new IllegalArgumentException(where + ": must start with a YAML frontmatter block: a '---' line, "
                    + "'name:' and 'description:', then another '---' line");
        }
        int start = next(s, firstEnd);
        int at = start;
        while (at < s.length()) {
            int end = lineEnd(s, at);
            if (s.substring(at, end).strip().equals("---")) {
                String front = s.substring(start, at);
                if (front.length() > MAX_FRONTMATTER) {
                    throw new IllegalArgumentException(where + ": the frontmatter is longer than " + MAX_FRONTMATTER + " characters");
                }
                return new String[] {front, s.substring(next(s, end)).strip()};
            }
            at = next(s, end);
        }
        throw new IllegalArgumentException(where + ": the frontmatter is not closed by a '---' line");
    }

    private static int lineEnd(String s, int from) {
        int newline = s.indexOf('\n', from);
        return newline < 0 ? s.length() : newline;
    }

    private static int next(String s, int lineEnd) {
        return Math.min(s.length(), lineEnd + 1);
    }

    static JsonNode yaml(String where, String frontmatter) {
        JsonNode root;
        try {
            root = YAML.readTree(frontmatter);
        } catch (JsonProcessingException e) {
            String message = firstLine(e.getOriginalMessage());
            int line = e.getLocation() == null ? -1 : e.getLocation().getLineNr();
            // SnakeYAML's first line says where it was ("while parsing a flow sequence"); its problem says what.
            if (e.getCause() instanceof MarkedYAMLException marked && marked.getProblem() != null) {
                message = marked.getProblem();
                line = marked.getProblemMark() == null ? line : marked.getProblemMark().getLine() + 1;
            }
            // The frontmatter starts on the second line of the file.
            throw new IllegalArgumentException(where + ": invalid YAML in the frontmatter"
                    + (line > 0 ? " at line " + (line + 1) : "") + ": " + message);
        }
        if (root == null || root.isMissingNode() || root.isNull()) {
            throw new IllegalArgumentException(where + ": the frontmatter is empty; it needs 'name:' and 'description:'");
        }
        if (!root.isObject()) {
            throw new IllegalArgumentException(where + ": the frontmatter must be a YAML mapping (key: value lines)");
        }
        return root;
    }

    private static String requiredString(String where, JsonNode root, String field) {
        JsonNode value = root.get(field);
        if (value == null || value.isNull()) {
            throw new IllegalArgumentException(where + ": the frontmatter has no '" + field + "'");
        }
        if (!value.isValueNode() || value.isBoolean()) {
            throw new IllegalArgumentException(where + ": '" + field + "' must be a string");
        }
        String text = value.asText().strip();
        if (text.isEmpty()) {
            throw new IllegalArgumentException(where + ": '" + field + "' is empty");
        }
        return text;
    }

    private static boolean bool(String where, JsonNode value) {
        if (value == null || value.isNull()) {
            return false;
        }
        if (value.isBoolean()) {
            return value.booleanValue();
        }
        if (value.isTextual()) {
            switch (value.textValue().strip().toLowerCase(Locale.ROOT)) {
                case "true", "yes", "on" -> {
                    return true;
                }
                case "false", "no", "off" -> {
                    return false;
                }
                default -> {
                }
            }
        }
        throw new IllegalArgumentException(where + ": 'always' must be true or false, got '" + value.asText() + "'");
    }

    /** {@code requires} as a map ({env: [...], bins: [...]}) or a list of such single-key maps. */
    private static void requires(String where, JsonNode value, List<String> env, List<String> bins) {
        if (value == null || value.isNull()) {
            return;
        }
        if (value.isObject()) {
            requirement(where, value, env, bins);
        } else if (value.isArray()) {
            for (JsonNode item : value) {
                if (!item.isObject()) {
                    throw new IllegalArgumentException(where + ": each item of 'requires' must be like 'env: [NAME]' or 'bins: [name]', got '"
                            + item.asText() + "'");
                }
                requirement(where, item, env, bins);
            }
        } else {
            throw new IllegalArgumentException(where + ": 'requires' must be a list like '- env: [NAME]' or a map with env and bins");
        }
    }

    private static void requirement(String where, JsonNode map, List<String> env, List<String> bins) {
        for (Iterator<Map.Entry<String, JsonNode>> it = map.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> entry = it.next();
            switch (entry.getKey()) {
                case "env" -> {
                    for (String name : strings(where, "requires.env", entry.getValue())) {
                        if (!ENV_NAME.matcher(name).matches()) {
                            throw new IllegalArgumentException(where + ": '" + name + "' in requires.env is not an environment variable name");
                        }
                        env.add(name);
                    }
                }
                case "bins" -> bins.addAll(strings(where, "requires.bins", entry.getValue()));
                default -> throw new IllegalArgumentException(where + ": unknown requirement '" + entry.getKey()
                        + "' in 'requires'; expected env or bins");
            }
        }
    }

    /** A list of non-empty strings; a single string counts as a list of one. */
    private static List<String> strings(String where, String field, JsonNode value) {
        List<String> out = new ArrayList<>();
        if (value == null || value.isNull()) {
            return out;
        }
        if (value.isTextual()) {
            value = YAML.createArrayNode().add(value);
        }
        if (!value.isArray()) {
            throw new IllegalArgumentException(where + ": '" + field + "' must be a list of strings");
        }
        for (JsonNode item : value) {
            if (!item.isTextual() || item.textValue().isBlank()) {
                throw new IllegalArgumentException(where + ": every item of '" + field + "' must be a non-empty string, got '"
                        + item + "'");
            }
            out.add(item.textValue().strip());
        }
        return out;
    }

    private static String firstLine(String message) {
        if (message == null) {
            return "unreadable";
        }
        int newline = message.indexOf('\n');
        return newline < 0 ? message : message.substring(0, newline);
    }
}
