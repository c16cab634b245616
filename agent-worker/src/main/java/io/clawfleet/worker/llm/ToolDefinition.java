package io.clawfleet.worker.llm;

import io.vertx.core.json.JsonObject;

/** A tool offered to the model: name, description and JSON-schema parameters. */
public record ToolDefinition(String name, String description, JsonObject parameters) {
}
