package io.clawfleet.worker.tools;

import io.clawfleet.worker.workspace.WorkspaceSnapshot;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;

/**
 * The tools a turn offers (seed 000 §7): the built-in ones every bot has, plus the tools a tenant's
 * workspace adds (code skills, named {@code <skill>__<tool>}). The combined registry is built once
 * per workspace snapshot; a skill switched off in a chat takes its tools with it.
 */
public final class ToolCatalog {

    private final ToolRegistry builtin;
    private final List<Function<WorkspaceSnapshot, List<Tool>>> sources;

    /** @param sources what a workspace adds; each is called once per snapshot */
    public ToolCatalog(List<Tool> builtin, List<Function<WorkspaceSnapshot, List<Tool>>> sources) {
        this.builtin = new ToolRegistry(builtin);
        this.sources = List.copyOf(sources);
    }

    public ToolRegistry builtin() {
        return builtin;
    }

    public ToolRegistry forTurn(WorkspaceSnapshot snapshot, Set<String> disabledSkills) {
        if (sources.isEmpty()) {
            return builtin;
        }
        ToolRegistry all = snapshot.derived(this, this::combine);
        if (disabledSkills.isEmpty()) {
            return all;
        }
        return all.without(name -> {
            int split = name.indexOf("__");
            return split > 0 && disabledSkills.contains(name.substring(0, split));
        });
    }

    private ToolRegistry combine(WorkspaceSnapshot snapshot) {
        List<Tool> tools = new ArrayList<>(builtin.tools());
        for (Function<WorkspaceSnapshot, List<Tool>> source : sources) {
            for (Tool tool : source.apply(snapshot)) {
                // A workspace cannot shadow a built-in tool.
                if (builtin.get(tool.name()).isEmpty() && tools.stream().noneMatch(t -> t.name().equals(tool.name()))) {
                    tools.add(Objects.requireNonNull(tool));
                }
            }
        }
        return new ToolRegistry(tools);
    }
}
