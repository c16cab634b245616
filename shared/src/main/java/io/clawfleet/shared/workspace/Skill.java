package io.clawfleet.shared.workspace;

import java.util.List;
import java.util.Objects;

/**
 * A skill of a tenant's bot (seed 000 §9): {@code skills/<name>/SKILL.md}, YAML frontmatter and a
 * markdown body. The index (name + description) goes into every system prompt; the body is read on
 * demand, unless {@code always} embeds it.
 *
 * @param requiresEnv environment variables the skill needs
 * @param requiresBins executables the skill needs
 * @param tools       tools the skill uses, as written in its frontmatter
 * @param body        the markdown after the frontmatter
 * @param path        the workspace path of its SKILL.md
 */
public record Skill(String name, String description, boolean always, List<String> requiresEnv,
                    List<String> requiresBins, List<String> tools, String body, String path) {

    public Skill {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(description, "description");
        requiresEnv = List.copyOf(requiresEnv);
        requiresBins = List.copyOf(requiresBins);
        tools = List.copyOf(tools);
        Objects.requireNonNull(body, "body");
        Objects.requireNonNull(path, "path");
    }
}
