package io.clawfleet.worker.sandbox;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.workspace.CodeSkill;
import io.vertx.core.json.JsonObject;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The wall-clock limit a worker sends with a code-skill call (seed 004 §4.5: 30 s unless the tool says otherwise). */
class CodeSkillToolsTest {

    private static CodeSkill.Tool tool(long timeoutMs) {
        return new CodeSkill.Tool("t", "a tool", new JsonObject().put("type", "object"), false, timeoutMs);
    }

    @Test
    void aToolWithoutItsOwnTimeoutGetsThirtySecondsAndOneWithItsOwnGetsItWithinTheSandboxsLongest() {
        ClawfleetConfig.Sandbox defaults = ConfigLoader.load(null, Map.of(), Map.of()).sandbox();
        assertThat(CodeSkillTools.timeoutMs(tool(0), defaults)).isEqualTo(30_000);
        assertThat(CodeSkillTools.timeoutMs(tool(10_000), defaults)).isEqualTo(10_000);
        assertThat(CodeSkillTools.timeoutMs(tool(3_600_000), defaults)).isEqualTo(defaults.maxTimeoutMs());
        // and the default is the operator's to change
        ClawfleetConfig.Sandbox shorter = ConfigLoader.load(null, Map.of(), Map.of("sandbox.skillTimeoutMs", "5000")).sandbox();
        assertThat(CodeSkillTools.timeoutMs(tool(0), shorter)).isEqualTo(5_000);
    }
}
