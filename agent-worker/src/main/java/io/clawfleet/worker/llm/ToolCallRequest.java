package io.clawfleet.worker.llm;

/**
 * A tool call the model asked for.
 *
 * @param arguments the arguments as the JSON text the model produced (validated by the tool, not here)
 */
public record ToolCallRequest(String id, String name, String arguments) {
}
