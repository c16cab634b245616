package io.clawfleet.shared.workspace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class WorkspacePathsTest {

    @ParameterizedTest
    @CsvSource({
            "IDENTITY.md, IDENTITY.md",
            "memory/MEMORY.md, memory/MEMORY.md",
            "./notes.md, notes.md",
            "a/./b/./c.md, a/b/c.md",
            "./././x, x",
            ".mcp.json, .mcp.json",
            "skills/web-research/SKILL.md, skills/web-research/SKILL.md",
            "'my notes/día 1.md', 'my notes/día 1.md'",
            "%2e%2e/secret, %2e%2e/secret",
            "...md, ...md",
            "a/.../b, a/.../b",
    })
    void validPathsComeOutCanonical(String given, String canonical) {
        assertThat(WorkspacePaths.normalize(given)).isEqualTo(canonical);
    }

    @Test
    void decomposedUnicodeBecomesComposed() {
        // given "é" as e + combining acute (how some file systems spell it) / then the same path as "é"
        assertThat(WorkspacePaths.normalize("caf\u0065\u0301.md")).isEqualTo("caf\u00e9.md");
    }

    static Stream<Arguments> badPaths() {
        return Stream.of(
                Arguments.of(null, "empty"),
                Arguments.of("", "empty"),
                Arguments.of("/etc/passwd", "absolute"),
                Arguments.of("//server/share", "absolute"),
                Arguments.of("..", "'..'"),
                Arguments.of("../x", "'..'"),
                Arguments.of("a/../../x", "'..'"),
                Arguments.of("a/..", "'..'"),
                Arguments.of("./../x", "'..'"),
                Arguments.of(".", "workspace itself"),
                Arguments.of("./.", "workspace itself"),
                Arguments.of("a\\b.md", "backslash"),
                Arguments.of("..\\..\\x", "backslash"),
                Arguments.of("C:\\x", "backslash"),
                Arguments.of("a\u0000b", "NUL"),
                Arguments.of("a\nb", "control character"),
                Arguments.of("a\rb", "control character"),
                Arguments.of("a\tb", "control character"),
                Arguments.of("a\u007fb", "control character"),
                Arguments.of("a\u0085b", "control character"),
                Arguments.of("a\u2028b", "control character"),
                Arguments.of("evil\u202Etxt.md", "bidirectional"),
                Arguments.of("a\uD800b", "unpaired surrogate"),
                Arguments.of("a//b", "empty segment"),
                Arguments.of("a/", "empty segment"),
                Arguments.of("memory/", "empty segment"),
                Arguments.of(" a.md", "space"),
                Arguments.of("a /b.md", "space"),
                Arguments.of("x".repeat(513), "longer than 512"),
                Arguments.of("a/b/c/d/e/f/g/h/i/j/k", "deeper than 10"));
    }

    @ParameterizedTest
    @MethodSource("badPaths")
    void badPathsAreRefusedNamingTheProblem(String path, String problem) {
        assertThatThrownBy(() -> WorkspacePaths.normalize(path))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(problem);
    }

    @Test
    void limitsAreInclusive() {
        assertThat(WorkspacePaths.normalize("x".repeat(512))).hasSize(512);
        assertThat(WorkspacePaths.normalize("a/b/c/d/e/f/g/h/i/j")).isEqualTo("a/b/c/d/e/f/g/h/i/j");
        // "." segments do not count as levels
        assertThat(WorkspacePaths.normalize("./a/b/c/d/e/f/g/h/i/j")).isEqualTo("a/b/c/d/e/f/g/h/i/j");
    }

    @Test
    void emojiAreFine() {
        assertThat(WorkspacePaths.normalize("notes/\uD83D\uDE80.md")).isEqualTo("notes/\uD83D\uDE80.md");
    }

    @Test
    void aChatsScratchFolderIsNamedLikeItsMemoryAndNeverShared() {
        assertThat(WorkspacePaths.chatScratch("telegram", "123")).isEqualTo("scratch/telegram_123");
        assertThat(WorkspacePaths.chatScratch("api", "a@b")).startsWith("scratch/api_a_b-")
                .isNotEqualTo(WorkspacePaths.chatScratch("api", "a_b"));
        assertThat(WorkspacePaths.chatMemory("api", "a@b")).isEqualTo("memory/"
                + WorkspacePaths.chatScratch("api", "a@b").substring("scratch/".length()) + ".md");
    }

    @Test
    void skillFiles() {
        assertThat(WorkspacePaths.isSkillFile("skills/web/SKILL.md")).isTrue();
        assertThat(WorkspacePaths.isSkillFile("skills/SKILL.md")).isFalse();
        assertThat(WorkspacePaths.isSkillFile("skills/a/b/SKILL.md")).isFalse();
        assertThat(WorkspacePaths.isSkillFile("skills/web/skill.md")).isFalse();
        assertThat(WorkspacePaths.skill("web")).isEqualTo("skills/web/SKILL.md");
        assertThatThrownBy(() -> WorkspacePaths.skill("..")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void chatMemoryOfASafeKeyIsReadable() {
        assertThat(WorkspacePaths.chatMemory("telegram", "-100123456")).isEqualTo("memory/telegram_-100123456.md");
        assertThat(WorkspacePaths.chatMemory("api", "alice")).isEqualTo("memory/api_alice.md");
    }

    @Test
    void chatMemoryOfUnsafeKeysStaysOneValidSegmentAndNeverCollides() {
        String slashy = WorkspacePaths.chatMemory("api", "../../etc/passwd");
        String at = WorkspacePaths.chatMemory("api", "a@b");
        String underscore = WorkspacePaths.chatMemory("api", "a_b");
        String control = WorkspacePaths.chatMemory("api", "a\u0000\nb");
        for (String path : new String[] {slashy, at, control}) {
            assertThat(WorkspacePaths.normalize(path)).isEqualTo(path);
            assertThat(path).startsWith("memory/api_").endsWith(".md").matches("memory/[^/]+");
        }
        assertThat(at).isNotEqualTo(underscore).matches("memory/api_a_b-[0-9a-f]{8}\\.md");
        assertThat(underscore).isEqualTo("memory/api_a_b.md");
    }

    @Test
    void chatMemoryOfALongKeyIsCutAndHashed() {
        String a = WorkspacePaths.chatMemory("api", "x".repeat(300) + "a");
        String b = WorkspacePaths.chatMemory("api", "x".repeat(300) + "b");
        assertThat(a).isNotEqualTo(b);
        assertThat(a.length()).isLessThan(130);
        assertThatThrownBy(() -> WorkspacePaths.chatMemory("api", "")).isInstanceOf(IllegalArgumentException.class);
    }
}
