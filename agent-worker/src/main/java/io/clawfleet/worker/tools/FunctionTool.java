package io.clawfleet.worker.tools;

import io.clawfleet.worker.llm.ToolDefinition;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;

import java.util.Objects;

/**
 * A tool made of its definition and a function: for tools whose whole logic is one call.
 *
 * @param mutating whether the call changes something (see {@link Tool#mutating()})
 */
public record FunctionTool(ToolDefinition definition, boolean mutating, Body body) implements Tool {

    /** What the tool does with a call's checked arguments. */
    @FunctionalInterface
    public interface Body {
        Future<String> run(ToolCallContext context, JsonObject arguments);
    }

    public FunctionTool {
        Objects.requireNonNull(definition);
        Objects.requireNonNull(body);
    }

    /** A tool that only reads. */
    public static FunctionTool reading(ToolDefinition definition, Body body) {
        return new FunctionTool(definition, false, body);
    }

    /** A tool that changes something: read-only bots may not use it, supervised ones ask first. */
    public static FunctionTool changing(ToolDefinition definition, Body body) {
        return new FunctionTool(definition, true, body);
    }

    @Override
    public String name() {
        return definition.name();
    }

    @Override
    public Future<String> execute(ToolCallContext context, JsonObject arguments) {
        return body.run(context, arguments);
    }
}
