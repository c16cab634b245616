package io.clawfleet.worker.workspace;

import io.clawfleet.shared.store.WorkspaceFile;
import io.clawfleet.shared.workspace.Skill;
import io.clawfleet.shared.workspace.SkillParser;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * One tenant's prompt files and skills as read at one moment: immutable, shared by every turn of
 * the tenant until the workspace changes. Skills whose requirements this node cannot meet are kept
 * with the reason, so the bot can say why a skill is unavailable instead of failing half way.
 */
public final class WorkspaceSnapshot {

    private final String tenantId;
    private final Map<String, WorkspaceFile> root;
    private final Map<String, Skill> skills;
    private final List<WorkspaceFile> skillFiles;
    private final List<SkillParser.Problem> problems;
    private final Map<String, String> unavailable;
    private final Map<Object, Object> derived = new ConcurrentHashMap<>();

    private WorkspaceSnapshot(String tenantId, Map<String, WorkspaceFile> root, Map<String, Skill> skills,
                              List<WorkspaceFile> skillFiles, List<SkillParser.Problem> problems,
                              Map<String, String> unavailable) {
        this.tenantId = Objects.requireNonNull(tenantId);
        this.root = Map.copyOf(root);
        this.skills = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(skills));
        this.skillFiles = List.copyOf(skillFiles);
        this.problems = List.copyOf(problems);
        this.unavailable = Map.copyOf(unavailable);
    }

    static WorkspaceSnapshot of(String tenantId, Map<String, WorkspaceFile> root, List<WorkspaceFile> skillFiles) {
        SkillParser.SkillSet set = SkillParser.scan(skillFiles);
        Map<String, Skill> skills = new java.util.TreeMap<>();
        Map<String, String> unavailable = new java.util.HashMap<>();
        for (Skill skill : set.skills()) {
            skills.put(skill.name(), skill);
            missing(skill).ifPresent(reason -> unavailable.put(skill.name(), reason));
        }
        return new WorkspaceSnapshot(tenantId, root, skills, skillFiles, set.problems(), unavailable);
    }

    public String tenantId() {
        return tenantId;
    }

    /** The valid skills, by name, in name order. */
    public Map<String, Skill> skills() {
        return skills;
    }

    /** Every file under skills/ (code skills need more than their SKILL.md). */
    public List<WorkspaceFile> skillFiles() {
        return skillFiles;
    }

    /** Skill files that could not be read, with the reason. */
    public List<SkillParser.Problem> problems() {
        return problems;
    }

    /** The text of a root file, or "" when the tenant has none. */
    public String text(String path) {
        WorkspaceFile file = root.get(path);
        return file == null ? "" : file.content();
    }

    public Optional<Skill> skill(String name) {
        return Optional.ofNullable(skills.get(name));
    }

    /** Why a skill cannot be used on this node, if it cannot. */
    public Optional<String> unavailable(String name) {
        return Optional.ofNullable(unavailable.get(name));
    }

    /**
     * Something derived from this snapshot, computed once (per key) and kept as long as the
     * snapshot is: the skills index text, the tools code skills add.
     */
    @SuppressWarnings("unchecked")
    public <T> T derived(Object key, Function<WorkspaceSnapshot, T> compute) {
        return (T) derived.computeIfAbsent(key, k -> compute.apply(this));
    }

    /** Requirements a worker can check itself: environment variables set, executables on the PATH. */
    private static Optional<String> missing(Skill skill) {
        List<String> lacking = new ArrayList<>();
        for (String env : skill.requiresEnv()) {
            String value = System.getenv(env);
            if (value == null || value.isEmpty()) {
                lacking.add("environment variable " + env);
            }
        }
        for (String bin : skill.requiresBins()) {
            if (!onPath(bin)) {
                lacking.add("executable " + bin);
            }
        }
        return lacking.isEmpty() ? Optional.empty() : Optional.of("needs " + String.join(", ", lacking));
    }

    private static boolean onPath(String bin) {
        String path = System.getenv("PATH");
        if (path == null || bin.contains("/")) {
            return false;
        }
        for (String dir : path.split(File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, bin))) {
                return true;
            }
        }
        return false;
    }
}
