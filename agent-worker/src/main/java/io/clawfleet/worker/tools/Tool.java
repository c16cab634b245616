package io.clawfleet.worker.tools;

import io.clawfleet.worker.llm.ToolDefinition;
import io.vertx.core.Future;
import io.vertx.core.json.JsonObject;

/**
 * A tool the model can call: narrow and explicit (seed 003), with a JSON-schema parameter list
 * the arguments are checked against before {@link #execute} sees them.
 */
public interface Tool {

    /** Wire name, with {@code _} (OpenAI function names allow no dots). */
    String name();

    ToolDefinition definition();

    /**
     * Runs the call; the result text goes back to the model. A refusal the model should read
     * (bad path, not found, ...) is a failed future with a {@link ToolException}.
     */
    Future<String> execute(ToolCallContext context, JsonObject arguments);

    /** Whether the call changes something (autonomy read_only denies it, supervised asks first). */
    default boolean mutating() {
        return false;
    }
}
