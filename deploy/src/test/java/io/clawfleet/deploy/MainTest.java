package io.clawfleet.deploy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The command line builds only the subcommand a launch names, and answers the same as with all of them. */
class MainTest {

    private static final List<String> ALL = Main.SUBCOMMANDS.stream()
            .map(c -> c.getAnnotation(CommandLine.Command.class).name()).toList();

    @Test
    void aLaunchThatNamesASubcommandBuildsThatOneAlone() {
        assertThat(Main.commandLine("node").getSubcommands().keySet()).containsExactly("node");
        assertThat(Main.commandLine("tenants").getSubcommands().keySet()).containsExactly("tenants");
    }

    @Test
    void anythingElseGetsEverySubcommandInHelpsOrder() {
        assertThat(ALL).hasSize(17).doesNotHaveDuplicates().contains("up", "node", "certs", "bench");
        for (String first : new String[] {null, "--help", "-V", "nod", "Node"}) {
            assertThat(Main.commandLine(first).getSubcommands().keySet()).as(String.valueOf(first)).containsExactlyElementsOf(ALL);
        }
        assertThat(Main.commandLine().getSubcommands().keySet()).containsExactlyElementsOf(ALL);
    }

    @Test
    void aSubcommandBuiltAloneHasTheSameHelpAndNestedCommands() {
        for (String name : ALL) {
            CommandLine alone = Main.commandLine(name).getSubcommands().get(name);
            CommandLine withAll = Main.commandLine().getSubcommands().get(name);
            assertThat(alone.getUsageMessage()).as(name).isEqualTo(withAll.getUsageMessage());
            assertThat(alone.getSubcommands().keySet()).as(name).containsExactlyElementsOf(withAll.getSubcommands().keySet());
            assertThat(alone.getCommandSpec().qualifiedName()).isEqualTo("clawfleet " + name);
        }
    }

    @Test
    void aMisspeltSubcommandIsRefusedAsBefore() {
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine("nod");
        cli.setErr(new PrintWriter(err));
        assertThat(cli.execute("nod")).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(err.toString()).contains("'nod'").contains("node");
    }

    @Test
    void anErrorInTheNamedSubcommandIsReportedByTheSameHandler(@TempDir Path empty) {
        StringWriter err = new StringWriter();
        CommandLine cli = Main.commandLine("certs");
        cli.setErr(new PrintWriter(err));
        // No CA in the folder: the command throws, and the handler set on the whole line prints one line for it.
        int code = cli.execute("certs", "issue", "--dir", empty.toString(), "--name", "w1", "--roles", "worker");
        assertThat(code).isEqualTo(1);
        assertThat(err.toString()).startsWith("clawfleet: ");
    }
}
