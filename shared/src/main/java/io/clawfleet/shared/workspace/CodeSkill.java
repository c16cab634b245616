package io.clawfleet.shared.workspace;

import io.vertx.core.json.JsonObject;

import java.util.List;
import java.util.Objects;

/**
 * A code skill (seed 004): a skill folder whose entry program implements tools. The program runs on a
 * sandbox node with the tool's arguments as JSON on stdin and answers with JSON on stdout; the model
 * sees each tool as {@code <skill>__<tool>}.
 *
 * @param name   the skill's name, the same as its folder
 * @param entry  the entry program, a workspace path inside the skill's folder
 * @param env    variables of the sandbox node's environment the skill asks for (given only if the node allows them)
 * @param tools  the tools it declares, in declaration order
 * @param source the file that declares the tools ({@code package.json} or {@code SKILL.md})
 */
public record CodeSkill(String name, String entry, List<String> env, List<Tool> tools, String source) {

    /** Separates skill and tool in a tool's wire name. */
    public static final String SEPARATOR = "__";

    public CodeSkill {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(entry, "entry");
        env = List.copyOf(env);
        tools = List.copyOf(tools);
        Objects.requireNonNull(source, "source");
    }

    /** The workspace folder of the skill, {@code skills/<name>}. */
    public String folder() {
        return WorkspacePaths.SKILLS_DIR + "/" + name;
    }

    /** The tool named {@code <skill>__<tool>} on the wire, or null when this skill has no such tool. */
    public Tool tool(String wireName) {
        for (Tool tool : tools) {
            if (wireName(tool).equals(wireName)) {
                return tool;
            }
        }
        return null;
    }

    public String wireName(Tool tool) {
        return name + SEPARATOR + tool.name();
    }

    /**
     * One tool of a code skill (seed 004 §3.2).
     *
     * @param parameters its arguments as a JSON schema object
     * @param readOnly   {@code security.level: read}: it changes nothing, so its file changes are not kept
     * @param timeoutMs  its own wall-clock limit ({@code timeout}, ms); 0 = the sandbox's default
     */
    public record Tool(String name, String description, JsonObject parameters, boolean readOnly, long timeoutMs) {

        public Tool {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(description, "description");
            parameters = parameters.copy();
        }

        @Override
        public JsonObject parameters() {
            return parameters.copy();
        }
    }
}
