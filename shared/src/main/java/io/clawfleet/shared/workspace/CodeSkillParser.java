package io.clawfleet.shared.workspace;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import io.clawfleet.shared.json.Json;
import io.clawfleet.shared.store.WorkspaceFile;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Finds the code skills of a workspace (seed 004 §3): a folder {@code skills/<name>/} that declares
 * tools either in {@code package.json} (the {@code clawfleet} field, or {@code owliabot} as in seed
 * 004 §3.2: {@code tools}, {@code requires.env}; {@code main} is the entry, default {@code index.js})
 * or in its {@code SKILL.md} frontmatter ({@code entry} and {@code code_tools}, same tool fields).
 * Every problem names the file and what is wrong; a skill with a problem declares no tools.
 */
public final class CodeSkillParser {

    /**
     * The code skills found, why others were skipped, and what was changed in those found (a timeout
     * over the limit, cut to it).
     */
    public record CodeSkillSet(List<CodeSkill> skills, List<SkillParser.Problem> problems, List<SkillParser.Problem> notes) {
        public CodeSkillSet {
            skills = List.copyOf(skills);
            problems = List.copyOf(problems);
            notes = List.copyOf(notes);
        }
    }

    public static final String PACKAGE_JSON = "package.json";
    /** The longest wire name OpenAI function calling accepts. */
    public static final int MAX_WIRE_NAME = 64;
    public static final long MAX_TIMEOUT_MS = 3_600_000;

    private static final Pattern TOOL_NAME = Pattern.compile("[A-Za-z0-9_-]{1,64}");
    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");
    private static final int MAX_DESCRIPTION = 1_024;

    private CodeSkillParser() {
    }

    /** The code skills among {@code files} (any workspace files; those outside {@code skills/} are ignored), by name. */
    public static CodeSkillSet scan(Collection<WorkspaceFile> files) {
        return scan(files, MAX_TIMEOUT_MS);
    }

    /**
     * As {@link #scan(Collection)}, with every tool's declared {@code timeout} cut to {@code maxTimeoutMs}
     * (the longest run the sandbox allows, {@code sandbox.maxTimeoutMs}), each cut named in the notes: a
     * skill that asks for more still works, within a limit it is told of, instead of being cut silently.
     */
    public static CodeSkillSet scan(Collection<WorkspaceFile> files, long maxTimeoutMs) {
        Map<String, Map<String, String>> folders = new TreeMap<>();
        for (WorkspaceFile file : files) {
            String[] segments = file.path().split("/");
            if (segments.length >= 3 && segments[0].equals(WorkspacePaths.SKILLS_DIR)) {
                folders.computeIfAbsent(segments[1], k -> new TreeMap<>()).put(file.path(), file.content());
            }
        }
        List<CodeSkill> skills = new ArrayList<>();
        List<SkillParser.Problem> problems = new ArrayList<>();
        folders.forEach((name, folder) -> {
            try {
                CodeSkill skill = parse(name, folder);
                if (skill != null) {
                    skills.add(skill);
                }
            } catch (Declared e) {
                problems.add(new SkillParser.Problem(e.path, e.getMessage()));
            }
        });
        List<SkillParser.Problem> notes = new ArrayList<>();
        List<CodeSkill> capped = skills.stream().map(skill -> capTimeouts(skill, maxTimeoutMs, notes)).toList();
        return new CodeSkillSet(capped, problems, notes);
    }

    private static CodeSkill capTimeouts(CodeSkill skill, long maxTimeoutMs, List<SkillParser.Problem> notes) {
        if (skill.tools().stream().noneMatch(t -> t.timeoutMs() > maxTimeoutMs)) {
            return skill;
        }
        List<CodeSkill.Tool> tools = new ArrayList<>();
        for (CodeSkill.Tool tool : skill.tools()) {
            if (tool.timeoutMs() > maxTimeoutMs) {
                notes.add(new SkillParser.Problem(skill.source(), "tool '" + tool.name() + "' declares a timeout of "
                        + tool.timeoutMs() + " ms; it runs with " + maxTimeoutMs + " ms, the longest the sandbox allows "
                        + "(sandbox.maxTimeoutMs)"));
                tool = new CodeSkill.Tool(tool.name(), tool.description(), tool.parameters(), tool.readOnly(), maxTimeoutMs);
            }
            tools.add(tool);
        }
        return new CodeSkill(skill.name(), skill.entry(), skill.env(), tools, skill.source());
    }

    /**
     * The code skill in one folder, or null when the folder declares no code tools.
     *
     * @param files the folder's files, keyed by workspace path ({@code skills/<name>/...})
     * @throws IllegalArgumentException naming the declaring file and the problem
     */
    public static CodeSkill parse(String name, Map<String, String> files) {
        String folder = WorkspacePaths.SKILLS_DIR + "/" + name;
        String packagePath = folder + "/" + PACKAGE_JSON;
        String skillPath = folder + "/" + WorkspacePaths.SKILL_FILE;
        CodeSkill fromPackage = files.containsKey(packagePath) ? fromPackage(name, packagePath, files) : null;
        CodeSkill fromSkillFile = files.containsKey(skillPath) ? fromSkillFile(name, skillPath, files) : null;
        if (fromPackage != null && fromSkillFile != null) {
            throw new Declared(skillPath, "code tools are declared both here and in " + PACKAGE_JSON + "; keep one");
        }
        CodeSkill skill = fromPackage != null ? fromPackage : fromSkillFile;
        // Its tools would be named mcp__<tool>, which is how MCP servers' tools are named and routed.
        if (skill != null && (name + CodeSkill.SEPARATOR).equals(McpServers.PREFIX)) {
            throw new Declared(skill.source(), "a code skill cannot be named 'mcp': tools named mcp__... are MCP servers' tools");
        }
        return skill;
    }

    private static CodeSkill fromPackage(String name, String path, Map<String, String> files) {
        JsonNode root;
        try {
            root = Json.MAPPER.readTree(files.get(path));
        } catch (JsonProcessingException e) {
            throw new Declared(path, "not valid JSON: " + e.getOriginalMessage());
        }
        if (root == null || !root.isObject()) {
            throw new Declared(path, "must be a JSON object");
        }
        JsonNode section = root.has("clawfleet") ? root.get("clawfleet") : root.get("owliabot");
        if (section == null || section.get("tools") == null) {
            return null;
        }
        checkName(name, path);
        List<String> env = new ArrayList<>();
        JsonNode requires = section.get("requires");
        if (requires != null && requires.get("env") != null) {
            env.addAll(envNames(path, requires.get("env")));
        }
        String main = root.hasNonNull("main") ? root.get("main").asText() : "index.js";
        return new CodeSkill(name, entry(name, path, main, files), env, tools(name, path, "tools", section.get("tools")), path);
    }

    private static CodeSkill fromSkillFile(String name, String path, Map<String, String> files) {
        JsonNode root;
        List<String> env;
        try {
            root = SkillParser.yaml(path, SkillParser.split(path, files.get(path))[0]);
            env = SkillParser.parse(path, files.get(path)).requiresEnv();
        } catch (IllegalArgumentException e) {
            // An invalid SKILL.md is reported by the skills index; it declares nothing here.
            return null;
        }
        JsonNode declared = root.get("code_tools");
        if (declared == null) {
            return null;
        }
        checkName(name, path);
        JsonNode entry = root.get("entry");
        if (entry == null || !entry.isTextual() || entry.asText().isBlank()) {
            throw new Declared(path, "'code_tools' needs 'entry': the program that implements them, like 'tool.py'");
        }
        return new CodeSkill(name, entry(name, path, entry.asText().strip(), files), env,
                tools(name, path, "code_tools", declared), path);
    }

    private static void checkName(String name, String path) {
        if (!SkillParser.NAME.matcher(name).matches()) {
            throw new Declared(path, "the folder name '" + name + "' must be lowercase letters, digits and '-' ("
                    + SkillParser.NAME.pattern() + "); it names the skill");
        }
    }

    private static String entry(String name, String path, String entry, Map<String, String> files) {
        String folder = WorkspacePaths.SKILLS_DIR + "/" + name;
        String resolved;
        try {
            resolved = WorkspacePaths.normalize(folder + "/" + entry);
        } catch (IllegalArgumentException e) {
            throw new Declared(path, "entry '" + entry + "': " + e.getMessage());
        }
        if (!resolved.startsWith(folder + "/")) {
            throw new Declared(path, "entry '" + entry + "' must be a file inside " + folder + "/");
        }
        if (!files.containsKey(resolved)) {
            throw new Declared(path, "entry '" + entry + "' does not exist (expected " + resolved + ")");
        }
        return resolved;
    }

    private static List<CodeSkill.Tool> tools(String skill, String path, String field, JsonNode declared) {
        if (!declared.isArray() || declared.isEmpty()) {
            throw new Declared(path, "'" + field + "' must be a non-empty list of tools, each with name, description and parameters");
        }
        List<CodeSkill.Tool> tools = new ArrayList<>();
        Set<String> names = new HashSet<>();
        for (JsonNode item : declared) {
            CodeSkill.Tool tool = tool(skill, path, item);
            if (!names.add(tool.name())) {
                throw new Declared(path, "two tools are named '" + tool.name() + "'");
            }
            tools.add(tool);
        }
        return tools;
    }

    private static CodeSkill.Tool tool(String skill, String path, JsonNode item) {
        if (!item.isObject()) {
            throw new Declared(path, "each tool must be an object with name, description and parameters, got " + item);
        }
        String name = item.path("name").asText("");
        if (!TOOL_NAME.matcher(name).matches()) {
            throw new Declared(path, "tool name '" + name + "' must be 1-64 letters, digits, '_' or '-'");
        }
        String where = "tool '" + name + "': ";
        if ((skill + CodeSkill.SEPARATOR + name).length() > MAX_WIRE_NAME) {
            throw new Declared(path, where + "'" + skill + CodeSkill.SEPARATOR + name + "' is longer than " + MAX_WIRE_NAME
                    + " characters, the most a model accepts; shorten the skill or tool name");
        }
        String description = item.path("description").asText("").strip();
        if (description.isEmpty() || description.length() > MAX_DESCRIPTION) {
            throw new Declared(path, where + "'description' must be 1 to " + MAX_DESCRIPTION + " characters");
        }
        JsonObject parameters = new JsonObject().put("type", "object").put("properties", new JsonObject());
        JsonNode declared = item.get("parameters");
        if (declared != null) {
            if (!declared.isObject() || !"object".equals(declared.path("type").asText("object"))) {
                throw new Declared(path, where + "'parameters' must be a JSON schema of type object");
            }
            parameters = new JsonObject(declared.toString());
            parameters.put("type", "object");
        }
        String level = item.path("security").path("level").asText("write").toLowerCase(Locale.ROOT);
        if (!level.equals("read") && !level.equals("write")) {
            throw new Declared(path, where + "security level '" + level + "' is not supported; use read or write");
        }
        long timeout = 0;
        if (item.has("timeout")) {
            timeout = item.get("timeout").asLong(-1);
            if (!item.get("timeout").canConvertToLong() || timeout < 1 || timeout > MAX_TIMEOUT_MS) {
                throw new Declared(path, where + "'timeout' must be milliseconds from 1 to " + MAX_TIMEOUT_MS);
            }
        }
        return new CodeSkill.Tool(name, description, parameters, level.equals("read"), timeout);
    }

    private static List<String> envNames(String path, JsonNode value) {
        if (!value.isArray()) {
            throw new Declared(path, "'requires.env' must be a list of environment variable names");
        }
        List<String> names = new ArrayList<>();
        for (JsonNode item : value) {
            if (!item.isTextual() || !ENV_NAME.matcher(item.asText()).matches()) {
                throw new Declared(path, "'" + item.asText() + "' in requires.env is not an environment variable name");
            }
            names.add(item.asText());
        }
        return names;
    }

    /** A declaration problem, with the file it is in. */
    private static final class Declared extends IllegalArgumentException {
        private final String path;

        Declared(String path, String message) {
            super(path + ": " + message);
            this.path = path;
        }
    }
}
