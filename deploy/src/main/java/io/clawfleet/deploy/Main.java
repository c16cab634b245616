package io.clawfleet.deploy;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code clawfleet} command line. */
@Command(name = "clawfleet",
        mixinStandardHelpOptions = true,
        versionProvider = Main.Version.class,
        description = "Hosts AI chat bots for many tenants on a cluster of JVMs.",
        subcommands = {UpCommand.class, NodeCommand.class, ChatCommand.class, MockLlmCommand.class, MigrateCommand.class,
                DeadLettersCommand.class, WorkspaceCommand.class, ChaosCommand.class, BenchCommand.class})
public final class Main implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    public static void main(String[] args) {
        int code = commandLine().execute(args);
        if (code != 0 || args.length == 0 || !isLongRunning(args[0])) {
            System.exit(code);
        }
    }

    static CommandLine commandLine() {
        CommandLine cli = new CommandLine(new Main());
        cli.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
            commandLine.getErr().println("clawfleet: " + (e.getMessage() == null ? e.toString() : e.getMessage()));
            return 1;
        });
        return cli;
    }

    private static boolean isLongRunning(String command) {
        return command.equals("up") || command.equals("node") || command.equals("mock-llm");
    }

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String version = Main.class.getPackage().getImplementationVersion();
            return new String[] {"clawfleet " + (version == null ? "development build" : version)};
        }
    }
}
