package io.clawfleet.shared.workspace;

import io.clawfleet.shared.store.WorkspaceFile;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class DefaultWorkspaceTest {

    @Test
    void defaultsAreTheWellKnownFilesAndTheHelpSkill() {
        assertThat(DefaultWorkspace.files().keySet()).containsExactly(WorkspacePaths.IDENTITY, WorkspacePaths.USER,
                WorkspacePaths.TOOLS, WorkspacePaths.AGENTS, WorkspacePaths.MEMORY, DefaultWorkspace.HELP_SKILL);
        DefaultWorkspace.files().forEach((path, content) -> {
            assertThat(WorkspacePaths.normalize(path)).isEqualTo(path);
            assertThat(content).as(path).isNotBlank();
        });
    }

    @Test
    void theHelpSkillParses() {
        Skill help = SkillParser.parse(DefaultWorkspace.HELP_SKILL, DefaultWorkspace.files().get(DefaultWorkspace.HELP_SKILL));
        assertThat(help.name()).isEqualTo("clawfleet-help");
        assertThat(help.always()).isFalse();
        assertThat(help.body()).contains("memory/MEMORY.md").contains("skills/<name>/SKILL.md").contains("clawfleet workspace");
    }

    @Test
    void defaultsFitTheFirstRequestBudget() {
        // Every default but the help skill's body (read on demand) lands in a fresh chat's first request,
        // which must stay under 6 KB with the tool definitions: the defaults get 1.5 KB of it.
        long bytes = 0;
        for (Map.Entry<String, String> file : DefaultWorkspace.files().entrySet()) {
            String content = file.getValue();
            if (file.getKey().equals(DefaultWorkspace.HELP_SKILL)) {
                Skill help = SkillParser.parse(file.getKey(), content);
                content = help.name() + help.description();
            }
            bytes += content.getBytes(StandardCharsets.UTF_8).length;
        }
        assertThat(bytes).isLessThan(1_536);
    }

    @Test
    void theDefaultsHoldExactlyOneSkill() {
        var files = DefaultWorkspace.files().entrySet().stream()
                .map(e -> new WorkspaceFile(e.getKey(), e.getValue(), 1, Instant.EPOCH)).toList();
        assertThat(SkillParser.scan(files).problems()).isEmpty();
        assertThat(SkillParser.scan(files).skills()).hasSize(1);
    }
}
