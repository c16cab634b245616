package io.clawfleet.shared.workspace;

import io.clawfleet.shared.store.WorkspaceFile;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CodeSkillParserTest {

    /** The example skills shipped in examples/skills, as workspace files under skills/. */
    static List<WorkspaceFile> examples() {
        Path root = Path.of("..", "examples", "skills");
        List<WorkspaceFile> files = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(root)) {
            walk.filter(Files::isRegularFile).forEach(p -> files.add(file("skills/" + root.relativize(p).toString().replace('\\', '/'),
                    read(p))));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return files;
    }

    private static String read(Path path) {
        try {
            return Files.readString(path);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static WorkspaceFile file(String path, String content) {
        return new WorkspaceFile(path, content, 1, Instant.EPOCH);
    }

    @Test
    void theShippedExamplesDeclareTheirTools() {
        // given the Node.js skill (package.json) and the script skill (SKILL.md) / when scanned / then both are found
        CodeSkillParser.CodeSkillSet set = CodeSkillParser.scan(examples());
        assertThat(set.problems()).isEmpty();
        assertThat(set.skills()).extracting(CodeSkill::name).containsExactly("text-tools", "unit-convert");

        CodeSkill text = set.skills().get(0);
        assertThat(text.entry()).isEqualTo("skills/text-tools/tool.py");
        assertThat(text.source()).isEqualTo("skills/text-tools/SKILL.md");
        assertThat(text.tools()).extracting(CodeSkill.Tool::name).containsExactly("count", "save_note");
        assertThat(text.tools().get(0).readOnly()).isTrue();
        assertThat(text.tools().get(1).readOnly()).isFalse();
        assertThat(text.tools().get(1).timeoutMs()).isEqualTo(10_000);
        assertThat(text.tool("text-tools__count")).isSameAs(text.tools().get(0));

        CodeSkill units = set.skills().get(1);
        assertThat(units.entry()).isEqualTo("skills/unit-convert/index.js");
        assertThat(units.wireName(units.tools().get(0))).isEqualTo("unit-convert__convert");
        assertThat(units.tools().get(0).parameters().getJsonArray("required")).containsExactly("value", "from", "to");
    }

    @Test
    void theSeedFieldNameWorksAndDeclaredEnvIsKept() {
        // given seed 004's owliabot field / when parsed / then it is read like the clawfleet field
        CodeSkill skill = CodeSkillParser.parse("crypto-price", Map.of(
                "skills/crypto-price/package.json", """
                        {"name": "crypto-price", "main": "price.js",
                         "owliabot": {"requires": {"env": ["COINGECKO_KEY"]},
                                      "tools": [{"name": "get_price", "description": "Price of a coin",
                                                 "parameters": {"type": "object", "properties": {"coin": {"type": "string"}}}}]}}""",
                "skills/crypto-price/price.js", "console.log('{}')"));
        assertThat(skill.env()).containsExactly("COINGECKO_KEY");
        assertThat(skill.entry()).isEqualTo("skills/crypto-price/price.js");
        assertThat(skill.tools().get(0).readOnly()).as("no level means it may change things").isFalse();
    }

    @Test
    void aFolderWithoutCodeToolsIsNotACodeSkill() {
        assertThat(CodeSkillParser.scan(List.of(file("skills/notes/SKILL.md", "---\nname: notes\ndescription: d\n---\nbody"),
                file("skills/lib/package.json", "{\"name\":\"lib\"}")))).satisfies(set -> {
                    assertThat(set.skills()).isEmpty();
                    assertThat(set.problems()).isEmpty();
                });
    }

    @Test
    void aCodeSkillCannotTakeTheNameOfMcpTools() {
        assertThatThrownBy(() -> CodeSkillParser.parse("mcp", Map.of("skills/mcp/package.json",
                "{\"main\": \"x.js\", \"clawfleet\": {\"tools\": [{\"name\": \"t\", \"description\": \"d\"}]}}",
                "skills/mcp/x.js", "")))
                .hasMessageContaining("skills/mcp/package.json").hasMessageContaining("cannot be named 'mcp'");
    }

    @Test
    void anEntryOutsideTheFolderIsRefused() {
        assertThatThrownBy(() -> CodeSkillParser.parse("evil", Map.of("skills/evil/package.json",
                "{\"main\": \"../other/x.js\", \"clawfleet\": {\"tools\": [{\"name\": \"t\", \"description\": \"d\"}]}}",
                "skills/other/x.js", "")))
                .hasMessageContaining("skills/evil/package.json").hasMessageContaining("..");
    }

    @Test
    void problemsNameTheFileAndTheTool() {
        // given several broken declarations / when scanned / then each is skipped with its reason
        CodeSkillParser.CodeSkillSet set = CodeSkillParser.scan(List.of(
                file("skills/a/package.json", "{\"clawfleet\": {\"tools\": [{\"name\": \"bad name\", \"description\": \"d\"}]}, \"main\": \"i.js\"}"),
                file("skills/a/i.js", ""),
                file("skills/b/SKILL.md", "---\nname: b\ndescription: d\ncode_tools:\n  - name: t\n    description: d\n---\n"),
                file("skills/c/package.json", "{\"clawfleet\": {\"tools\": [{\"name\": \"t\", \"description\": \"d\", \"security\": {\"level\": \"sign\"}}]}}"),
                file("skills/c/index.js", ""),
                file("skills/d/package.json", "{\"clawfleet\": {\"tools\": [{\"name\": \"t\", \"description\": \"d\"}]}}"),
                file("skills/e/package.json", "{not json")));
        assertThat(set.skills()).isEmpty();
        assertThat(set.problems()).extracting(SkillParser.Problem::message).satisfiesExactly(
                m -> assertThat(m).startsWith("skills/a/package.json").contains("'bad name'"),
                m -> assertThat(m).startsWith("skills/b/SKILL.md").contains("needs 'entry'"),
                m -> assertThat(m).startsWith("skills/c/package.json").contains("'sign' is not supported"),
                m -> assertThat(m).startsWith("skills/d/package.json").contains("entry 'index.js' does not exist"),
                m -> assertThat(m).startsWith("skills/e/package.json").contains("not valid JSON"));
    }

    @Test
    void aWireNameLongerThanModelsAcceptIsRefused() {
        String skill = "a-skill-with-a-rather-long-descriptive-name";
        assertThatThrownBy(() -> CodeSkillParser.parse(skill, Map.of("skills/" + skill + "/package.json",
                "{\"clawfleet\": {\"tools\": [{\"name\": \"and_a_long_tool_name\", \"description\": \"d\"}]}}",
                "skills/" + skill + "/index.js", "")))
                .hasMessageContaining("longer than 64");
    }

    @Test
    void aTimeoutOverTheSandboxsLongestIsCutToItAndSaysSo() {
        // given a skill whose tools ask for 2 minutes and 10 s / when scanned for a sandbox allowing 45 s
        CodeSkillParser.CodeSkillSet set = CodeSkillParser.scan(List.of(file("skills/slow/package.json", """
                {"main": "index.js", "clawfleet": {"tools": [
                  {"name": "crunch", "description": "takes long", "timeout": 120000},
                  {"name": "quick", "description": "takes little", "timeout": 10000}]}}"""),
                file("skills/slow/index.js", "console.log('{}')")), 45_000);
        // then the long one runs with 45 s, the other with its own, and the cut is named
        CodeSkill skill = set.skills().get(0);
        assertThat(skill.tools()).extracting(CodeSkill.Tool::timeoutMs).containsExactly(45_000L, 10_000L);
        assertThat(set.problems()).isEmpty();
        assertThat(set.notes()).singleElement().satisfies(note -> {
            assertThat(note.path()).isEqualTo("skills/slow/package.json");
            assertThat(note.message()).isEqualTo("tool 'crunch' declares a timeout of 120000 ms; it runs with 45000 ms, "
                    + "the longest the sandbox allows (sandbox.maxTimeoutMs)");
        });
    }
}
