package io.clawfleet.worker.tools;

import io.clawfleet.worker.llm.ToolDefinition;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/** The tools a worker offers, by name, in a stable order (so the prompt's bytes are stable too). */
public final class ToolRegistry {

    private final Map<String, Tool> tools = new LinkedHashMap<>();

    public ToolRegistry(Collection<Tool> tools) {
        for (Tool tool : tools) {
            if (this.tools.put(tool.name(), tool) != null) {
                throw new IllegalArgumentException("two tools are named " + tool.name());
            }
        }
    }

    public Optional<Tool> get(String name) {
        return Optional.ofNullable(tools.get(name));
    }

    public Set<String> names() {
        return tools.keySet();
    }

    public List<Tool> tools() {
        return List.copyOf(tools.values());
    }

    /** The same tools less those whose name matches {@code drop}. */
    public ToolRegistry without(java.util.function.Predicate<String> drop) {
        return new ToolRegistry(tools.values().stream().filter(tool -> !drop.test(tool.name())).toList());
    }

    /** The same tools and those of {@code more} whose names are not taken yet (nothing shadows a tool). */
    public ToolRegistry plus(Collection<Tool> more) {
        if (more.isEmpty()) {
            return this;
        }
        Map<String, Tool> all = new LinkedHashMap<>(tools);
        more.forEach(tool -> all.putIfAbsent(tool.name(), tool));
        return new ToolRegistry(all.values());
    }

    public List<ToolDefinition> definitions() {
        return tools.values().stream().map(Tool::definition).toList();
    }
}
