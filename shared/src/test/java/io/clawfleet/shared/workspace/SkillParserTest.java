package io.clawfleet.shared.workspace;

import io.clawfleet.shared.store.WorkspaceFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Instant;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SkillParserTest {

    private static final String PATH = "skills/web-research/SKILL.md";

    @Test
    void theSeedExampleParses() {
        // given the frontmatter of seed 000 §9.2 / when parsed / then every field is there
        Skill skill = SkillParser.parse(PATH, """
                ---
                name: web-research
                description: "Web search + citation formatting"
                always: false
                requires:
                  - env: ["BRAVE_API_KEY"]
                tools:
                  - web.search
                  - web.fetch
                ---

                # Web research
                Search, then cite.
                """);
        assertThat(skill.name()).isEqualTo("web-research");
        assertThat(skill.description()).isEqualTo("Web search + citation formatting");
        assertThat(skill.always()).isFalse();
        assertThat(skill.requiresEnv()).containsExactly("BRAVE_API_KEY");
        assertThat(skill.requiresBins()).isEmpty();
        assertThat(skill.tools()).containsExactly("web.search", "web.fetch");
        assertThat(skill.body()).isEqualTo("# Web research\nSearch, then cite.");
        assertThat(skill.path()).isEqualTo(PATH);
    }

    @Test
    void requiresMayBeAMapAndListsMayBeSingleStrings() {
        Skill skill = SkillParser.parse("skills/pdf/SKILL.md", "---\r\nname: pdf\r\ndescription: Read PDFs\r\nalways: true\r\n"
                + "requires:\r\n  env: PDF_KEY\r\n  bins: [pdftotext, qpdf]\r\ntools: shell_exec\r\n---\r\nBody\r\n");
        assertThat(skill.always()).isTrue();
        assertThat(skill.requiresEnv()).containsExactly("PDF_KEY");
        assertThat(skill.requiresBins()).containsExactly("pdftotext", "qpdf");
        assertThat(skill.tools()).containsExactly("shell_exec");
        assertThat(skill.body()).isEqualTo("Body");
    }

    @Test
    void requiresListMayMixEnvAndBins() {
        Skill skill = SkillParser.parse("skills/x/SKILL.md", """
                ---
                name: x
                description: d
                requires:
                  - env: [A, B]
                  - bins: [git]
                  - env: [C]
                ---
                """);
        assertThat(skill.requiresEnv()).containsExactly("A", "B", "C");
        assertThat(skill.requiresBins()).containsExactly("git");
        assertThat(skill.body()).isEmpty();
    }

    @Test
    void unknownKeysAreIgnoredForForwardCompatibility() {
        Skill skill = SkillParser.parse("skills/x/SKILL.md", "\uFEFF---\nname: x\ndescription: d\nversion: 2\nlicense: MIT\n---\nhi");
        assertThat(skill.name()).isEqualTo("x");
    }

    @Test
    void aSkillOutsideTheSkillsFolderNeedsNoMatchingFolder() {
        assertThat(SkillParser.parse(null, "---\nname: x\ndescription: d\n---\n").path()).isEqualTo("SKILL.md");
    }

    static Stream<Arguments> invalidSkills() {
        return Stream.of(
                Arguments.of("no frontmatter", "# just markdown", "must start with a YAML frontmatter"),
                Arguments.of("empty file", "", "must start with a YAML frontmatter"),
                Arguments.of("unclosed", "---\nname: x\ndescription: d\n", "not closed"),
                Arguments.of("empty frontmatter", "---\n---\nbody", "frontmatter is empty"),
                Arguments.of("not a mapping", "---\n- a\n- b\n---\n", "must be a YAML mapping"),
                Arguments.of("bad YAML", "---\nname: x\ndescription: [unclosed\n---\n", "invalid YAML in the frontmatter"),
                Arguments.of("tab-indented YAML", "---\nname: x\n\tdescription: d\n---\n", "invalid YAML"),
                Arguments.of("duplicate key", "---\nname: x\nname: y\ndescription: d\n---\n", "invalid YAML"),
                Arguments.of("missing name", "---\ndescription: d\n---\n", "has no 'name'"),
                Arguments.of("missing description", "---\nname: x\n---\n", "has no 'description'"),
                Arguments.of("blank description", "---\nname: x\ndescription: '  '\n---\n", "'description' is empty"),
                Arguments.of("description not a string", "---\nname: x\ndescription: [a, b]\n---\n", "'description' must be a string"),
                Arguments.of("uppercase name", "---\nname: Web\ndescription: d\n---\n", "name 'Web' must be lowercase"),
                Arguments.of("name with a space", "---\nname: web research\ndescription: d\n---\n", "must be lowercase"),
                Arguments.of("name starting with '-'", "---\nname: -web\ndescription: d\n---\n", "must be lowercase"),
                Arguments.of("name too long", "---\nname: " + "a".repeat(65) + "\ndescription: d\n---\n", "must be lowercase"),
                Arguments.of("name not the folder", "---\nname: other\ndescription: d\n---\n", "does not match its folder 'x'"),
                Arguments.of("always not boolean", "---\nname: x\ndescription: d\nalways: sometimes\n---\n", "'always' must be true or false"),
                Arguments.of("requires scalar", "---\nname: x\ndescription: d\nrequires: BRAVE\n---\n", "'requires' must be"),
                Arguments.of("requires unknown kind", "---\nname: x\ndescription: d\nrequires:\n  - os: [linux]\n---\n", "unknown requirement 'os'"),
                Arguments.of("requires item not a map", "---\nname: x\ndescription: d\nrequires: [BRAVE]\n---\n", "each item of 'requires'"),
                Arguments.of("bad env name", "---\nname: x\ndescription: d\nrequires:\n  env: [\"MY-KEY\"]\n---\n", "not an environment variable name"),
                Arguments.of("tools not strings", "---\nname: x\ndescription: d\ntools: [{a: 1}]\n---\n", "every item of 'tools'"),
                Arguments.of("tools a map", "---\nname: x\ndescription: d\ntools: {a: 1}\n---\n", "'tools' must be a list"),
                Arguments.of("description too long", "---\nname: x\ndescription: " + "d".repeat(1025) + "\n---\n", "longer than 1024"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidSkills")
    void invalidSkillsAreRefusedNamingFileAndProblem(String name, String text, String problem) {
        assertThatThrownBy(() -> SkillParser.parse("skills/x/SKILL.md", text))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("skills/x/SKILL.md: ")
                .hasMessageContaining(problem);
    }

    @Test
    void yamlErrorsNameTheLineOfTheFile() {
        assertThatThrownBy(() -> SkillParser.parse("skills/x/SKILL.md", "---\nname: x\ndescription: d\nbad: [\n---\n"))
                .hasMessageContaining("line");
    }

    @Test
    void scanSkipsInvalidSkillsAndReportsThem() {
        // given a workspace with two good skills, a broken one and files that are not skill definitions
        List<WorkspaceFile> files = List.of(
                file("skills/b/SKILL.md", "---\nname: b\ndescription: second\n---\n"),
                file("skills/a/SKILL.md", "---\nname: a\ndescription: first\n---\n"),
                file("skills/broken/SKILL.md", "no frontmatter"),
                file("skills/a/notes.md", "not a skill"),
                file("skills/c/d/SKILL.md", "too deep"),
                file("IDENTITY.md", "me"));
        // when scanned / then the good ones come sorted, the broken one is reported by path
        SkillParser.SkillSet set = SkillParser.scan(files);
        assertThat(set.skills()).extracting(Skill::name).containsExactly("a", "b");
        assertThat(set.problems()).singleElement().satisfies(p -> {
            assertThat(p.path()).isEqualTo("skills/broken/SKILL.md");
            assertThat(p.message()).contains("frontmatter");
        });
        assertThat(SkillParser.skills(files)).extracting(Skill::name).containsExactly("a", "b");
    }

    private static WorkspaceFile file(String path, String content) {
        return new WorkspaceFile(path, content, 1, Instant.EPOCH);
    }
}
