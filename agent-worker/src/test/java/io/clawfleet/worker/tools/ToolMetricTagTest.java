package io.clawfleet.worker.tools;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The tool metrics' tag stays a bounded set whatever tenants name their tools and whatever the model calls. */
class ToolMetricTagTest {

    @Test
    void builtInToolsKeepTheirNamesAndTenantOrModelNamesFoldIntoAFewTags() {
        assertThat(ToolRunner.metricTag("fs_read", true)).isEqualTo("fs_read");
        assertThat(ToolRunner.metricTag("mcp__github__create_issue", true)).isEqualTo("mcp");
        assertThat(ToolRunner.metricTag("mcp__made_up__x", false)).isEqualTo("mcp");
        assertThat(ToolRunner.metricTag("weather__forecast", true)).isEqualTo("skill");
        assertThat(ToolRunner.metricTag("delete_everything", false)).isEqualTo("unknown");
    }
}
