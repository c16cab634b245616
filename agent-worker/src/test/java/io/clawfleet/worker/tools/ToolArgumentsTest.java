package io.clawfleet.worker.tools;

import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Arguments checked against schemas as tools declare them, MCP servers' richer ones included. */
class ToolArgumentsTest {

    private static final JsonObject SCHEMA = new JsonObject("""
            {"type": "object", "required": ["message"], "properties": {
              "message": {"type": "string", "maxLength": 10},
              "count": {"type": ["integer", "null"]},
              "target": {"anyOf": [{"type": "string"}, {"type": "number"}]},
              "anything": true}}""");

    @Test
    void typedPropertiesAreChecked() {
        assertThatThrownBy(() -> ToolArguments.check("{\"message\": 5}", SCHEMA)).hasMessage("argument 'message' must be a string");
        assertThatThrownBy(() -> ToolArguments.check("{\"message\": \"x\", \"extra\": 1}", SCHEMA))
                .hasMessageStartingWith("unknown argument 'extra'");
        assertThatThrownBy(() -> ToolArguments.check("{}", SCHEMA)).hasMessage("missing required argument 'message'");
    }

    @Test
    void whatTheCheckerDoesNotReadIsLeftToTheTool() {
        JsonObject args = ToolArguments.check("{\"message\": \"hi\", \"count\": null, \"target\": 3, \"anything\": [1]}", SCHEMA);
        assertThat(args.getValue("target")).isEqualTo(3);
    }
}
