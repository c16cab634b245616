package io.clawfleet.worker.tools.builtin;

import io.clawfleet.worker.llm.ToolDefinition;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;

/**
 * Compact JSON-schema building for tool definitions. Descriptions are terse on purpose: every
 * byte of them is sent with every model request.
 */
final class Schemas {

    private Schemas() {
    }

    /**
     * A tool whose parameters are all strings; {@code params} alternates name and description. A
     * null description is left out: a parameter whose name says it all costs no more bytes.
     */
    static ToolDefinition tool(String name, String description, String[] required, String... params) {
        JsonObject properties = new JsonObject();
        for (int i = 0; i < params.length; i += 2) {
            JsonObject param = new JsonObject().put("type", "string");
            if (params[i + 1] != null) {
                param.put("description", params[i + 1]);
            }
            properties.put(params[i], param);
        }
        JsonObject schema = new JsonObject().put("type", "object").put("properties", properties);
        if (required.length > 0) {
            schema.put("required", new JsonArray(java.util.List.of((Object[]) required)));
        }
        return new ToolDefinition(name, description, schema);
    }

    /** Restricts a string parameter to a set of values. */
    static ToolDefinition withEnum(ToolDefinition definition, String param, String... values) {
        definition.parameters().getJsonObject("properties").getJsonObject(param)
                .put("enum", new JsonArray(java.util.List.of((Object[]) values)));
        return definition;
    }

    static String[] required(String... names) {
        return names;
    }
}
