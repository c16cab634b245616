package io.clawfleet.shared.workspace;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The files a new tenant's workspace starts with, kept as resources under
 * {@code workspace-defaults/}. Short on purpose: most of them are in every system prompt.
 */
public final class DefaultWorkspace {

    /** The built-in help skill: what the bot can do, memory, skills, commands. */
    public static final String HELP_SKILL = "skills/clawfleet-help/SKILL.md";

    private static final String ROOT = "workspace-defaults/";
    private static final List<String> PATHS = List.of(WorkspacePaths.IDENTITY, WorkspacePaths.USER, WorkspacePaths.TOOLS,
            WorkspacePaths.AGENTS, WorkspacePaths.MEMORY, HELP_SKILL);
    // Read once, when the class is first used: a few hundred bytes from the jar.
    private static final Map<String, String> FILES = load();

    private DefaultWorkspace() {
    }

    /** Path to content, in a stable order. */
    public static Map<String, String> files() {
        return FILES;
    }

    public static List<String> paths() {
        return PATHS;
    }

    private static Map<String, String> load() {
        Map<String, String> files = new LinkedHashMap<>();
        for (String path : PATHS) {
            try (InputStream in = DefaultWorkspace.class.getClassLoader().getResourceAsStream(ROOT + path)) {
                if (in == null) {
                    throw new IllegalStateException("the default workspace file " + ROOT + path + " is missing from the classpath");
                }
                files.put(path, new String(in.readAllBytes(), StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read the default workspace file " + ROOT + path, e);
            }
        }
        return Collections.unmodifiableMap(files);
    }
}
