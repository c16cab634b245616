package io.clawfleet.deploy;

import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.util.List;
import java.util.Optional;

/** The {@code clawfleet} command line. */
@Command(name = "clawfleet",
        mixinStandardHelpOptions = true,
        versionProvider = Main.Version.class,
        description = "Hosts AI chat bots for many tenants on a cluster of JVMs.")
public final class Main implements Runnable {

    /**
     * The subcommands, in the order help lists them. They are added by {@link #commandLine(String)}, not named in
     * the annotation: picocli builds the model of every subcommand it is given (options, sub-subcommands, their
     * objects) before it parses, and a launch needs one of them. Building all 17 cost about 185 ms of a cold start.
     */
    static final List<Class<?>> SUBCOMMANDS = List.of(UpCommand.class, NodeCommand.class, ChatCommand.class,
            MockLlmCommand.class, MigrateCommand.class, DeadLettersCommand.class, WorkspaceCommand.class, ExportCommand.class,
            AdminCommand.class, TenantsCommand.class, KeysCommand.class, BotsCommand.class, PairingsCommand.class,
            SecretsCommand.class, CertsCommand.class, ChaosCommand.class, BenchCommand.class);

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /**
     * For test and benchmark harnesses that start nodes as child JVMs: the pid of the process whose end
     * should end this one too. A harness killed with SIGKILL runs no shutdown hook, and its nodes would
     * otherwise run on, load the machine and hold ports while the next run starts. Not for production.
     */
    public static final String EXIT_WITH_PARENT = "clawfleet.exitWithParent";
    /**
     * Exit status of {@code clawfleet node} when the cluster shut its member down (a merge after a split refused,
     * say): only a restart makes such a node whole, so its supervisor (Kubernetes, systemd, a test harness) should
     * start it again.
     */
    public static final int EXIT_MEMBER_LOST = 3;

    public static void main(String[] args) {
        exitWithParent(System.getProperty(EXIT_WITH_PARENT));
        int code = commandLine(args.length == 0 ? null : args[0]).execute(args);
        if (code != 0 || args.length == 0 || !isLongRunning(args[0])) {
            System.exit(code);
        }
    }

    /** The whole command line, every subcommand in it. */
    static CommandLine commandLine() {
        return commandLine(null);
    }

    /**
     * The command line for arguments that start with {@code first}: when it names a subcommand, that subcommand
     * alone is built (help, errors and parsing of it are the same as with all of them); anything else (nothing, an
     * option such as {@code --help}, a misspelt name) gets every subcommand, so top-level help lists them all and a
     * wrong name is answered as before.
     */
    static CommandLine commandLine(String first) {
        CommandLine cli = new CommandLine(new Main());
        boolean named = SUBCOMMANDS.stream().anyMatch(c -> nameOf(c).equals(first));
        for (Class<?> subcommand : SUBCOMMANDS) {
            if (!named || nameOf(subcommand).equals(first)) {
                cli.addSubcommand(subcommand);
            }
        }
        cli.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
            commandLine.getErr().println("clawfleet: " + (e.getMessage() == null ? e.toString() : e.getMessage()));
            return 1;
        });
        return cli;
    }

    private static String nameOf(Class<?> subcommand) {
        return subcommand.getAnnotation(Command.class).name();
    }

    static void exitWithParent(String pid) {
        if (pid == null || pid.isBlank()) {
            return;
        }
        Optional<ProcessHandle> parent = ProcessHandle.of(Long.parseLong(pid.strip()));
        if (parent.isEmpty()) {
            System.err.println("clawfleet: the process " + pid + " this node was to end with is gone; exiting");
            System.exit(3);
        }
        // System.exit runs the shutdown hooks: the node stops as on SIGTERM.
        parent.get().onExit().thenRun(() -> {
            System.err.println("clawfleet: the process " + pid + " that started this node ended; stopping");
            System.exit(3);
        });
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
