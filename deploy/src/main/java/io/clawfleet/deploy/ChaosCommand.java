package io.clawfleet.deploy;

import io.clawfleet.deploy.chaos.ChaosRun;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;

/** The chaos run of docs/RELIABILITY.md: a cluster under load and faults; exit 0 only if nothing was lost. */
@Command(name = "chaos", mixinStandardHelpOptions = true,
        description = {"Start a cluster of separate JVMs (2 gateways, 3 workers, sandbox, scheduler) on an embedded",
                "PostgreSQL, drive chats through it and inject kill -9, SIGSTOP/SIGCONT, node restarts and PostgreSQL",
                "restarts (and, with --net-cuts, network link cuts); then check that every accepted message was answered",
                "exactly once, in order."})
final class ChaosCommand implements Callable<Integer> {

    @Option(names = "--minutes", defaultValue = "10", description = "How long faults are injected (default ${DEFAULT-VALUE}).")
    double minutes;

    @Option(names = "--fault-every-ms", defaultValue = "4000", description = "Mean time between faults (default ${DEFAULT-VALUE}).")
    long faultEveryMs;

    @Option(names = "--min-faults", defaultValue = "0",
            description = "Go on past --minutes (up to three times as long) until this many faults were injected (default ${DEFAULT-VALUE}).")
    int minFaults;

    @Option(names = "--chats", defaultValue = "150", description = "Chats sending at once (default ${DEFAULT-VALUE}).")
    int chats;

    @Option(names = "--pause-ms", defaultValue = "2000", description = "Each chat sends one message every this many ms (default ${DEFAULT-VALUE}).")
    long pauseMs;

    @Option(names = "--model-latency-ms", defaultValue = "30", description = "Mock model latency (default ${DEFAULT-VALUE}).")
    long modelLatencyMs;

    @Option(names = "--postgres-outage-ms", defaultValue = "10000",
            description = {"PostgreSQL restarts are among the faults; each keeps the database down between a third of this",
                    "and all of it (default ${DEFAULT-VALUE}, at most 60000; 0: never restart it)."})
    long postgresOutageMs;

    @Option(names = "--poison-pills", defaultValue = "2",
            description = {"Messages whose turn kills the worker that runs it (kill -9 when it asks the model), sent spread",
                    "over the run; each must end as a dead letter after at most 5 crashes, and nothing else may",
                    "(default ${DEFAULT-VALUE}, at most 20; 0: none)."})
    int poisonPills;

    @Option(names = "--floods", defaultValue = "2",
            description = {"Bursts beyond capacity, spread over the run: 4 chats send 400 messages each, back to back, past",
                    "the 100 a chat may have unanswered in the chaos cluster; what is accepted must be answered once, what is",
                    "refused (429/503) never, and every refusal must say when to retry (default ${DEFAULT-VALUE}, at most 10;",
                    "0: none)."})
    int floods;

    @Option(names = "--net-cuts",
            description = {"Run every node on a host of its own (a network namespace with a link to the other nodes and one",
                    "to PostgreSQL and the model) and add link cuts to the faults: a worker cut off from the other nodes or",
                    "from PostgreSQL, a gateway cut off from the other nodes, each for 4 to 25 s. Needs root and iproute2;",
                    "without them the run stays on loopback and its report says so."})
    boolean netCuts;

    @Option(names = "--sample-every-s", defaultValue = "60",
            description = {"Sample every node's RSS, heap after a full collection, threads and open files, and PostgreSQL's",
                    "connections and table sizes, this often; written to resources.csv beside the report, each series",
                    "summed up with its slope per hour in the report's 'resources' (default ${DEFAULT-VALUE}; 0: never)."})
    long sampleEverySeconds;

    @Option(names = "--side-effect-chats", defaultValue = "4",
            description = "Chats whose every message calls a tool that changes things (a counter on a remote MCP server,"
                    + " a key per message, answering 400 ms after it counted); no key may be counted twice, whatever"
                    + " the faults (default ${DEFAULT-VALUE}, at most 50; 0: none).")
    int sideEffectChats;

    @Option(names = "--retention-s", defaultValue = "0",
            description = "Prune answered messages, delivered replies, the chats' history and each model call's usage row"
                    + " (summed per day) after this many seconds (at"
                    + " least 61), the scheduler pruning every quarter of it, the clients reading their replies as they"
                    + " go; check at the end that it kept up: for a soak whose database stays flat (default 0: the"
                    + " node's retention of days).")
    long retentionSeconds;

    @Option(names = "--seed", defaultValue = "1", description = "Random seed of the fault schedule (default ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--max-gap-ms", defaultValue = "5000", description = "Longest acceptable failover gap (default ${DEFAULT-VALUE}).")
    long maxGapMs;

    @Option(names = "--logs", defaultValue = "target/chaos", description = "Node logs and chaos-report.json go here (default ${DEFAULT-VALUE}).")
    Path logs;

    @Override
    public Integer call() throws Exception {
        if (postgresOutageMs < 0 || postgresOutageMs > 60_000) {
            throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
                    "--postgres-outage-ms must be between 0 and 60000, not " + postgresOutageMs);
        }
        if (poisonPills < 0 || poisonPills > 20) {
            throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
                    "--poison-pills must be between 0 and 20, not " + poisonPills);
        }
        if (sampleEverySeconds != 0 && (sampleEverySeconds < 5 || sampleEverySeconds > 3_600)) {
            throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
                    "--sample-every-s must be 0 (never) or between 5 and 3600, not " + sampleEverySeconds);
        }
        if (retentionSeconds != 0 && (retentionSeconds < 61 || retentionSeconds > 86_400)) {
            throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
                    "--retention-s must be 0 (the node's days) or between 61 and 86400, not " + retentionSeconds);
        }
        if (sideEffectChats < 0 || sideEffectChats > 50) {
            throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
                    "--side-effect-chats must be between 0 and 50, not " + sideEffectChats);
        }
        if (floods < 0 || floods > 10) {
            throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
                    "--floods must be between 0 and 10, not " + floods);
        }
        Path jar = Path.of(Main.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        ChaosRun.Report report = new ChaosRun(new ChaosRun.Options(Duration.ofMillis((long) (minutes * 60_000)),
                faultEveryMs, minFaults, chats, pauseMs, modelLatencyMs, 3_000, postgresOutageMs, poisonPills, floods, sideEffectChats, netCuts, sampleEverySeconds * 1_000,
                retentionSeconds, seed, jar,
                logs)).run();
        System.out.println(report.toJson().encodePrettily());
        boolean passed = report.passed(maxGapMs);
        System.out.println(passed ? "PASSED: nothing lost, duplicated or out of order; longest failover gap "
                + report.longestFailoverGapMs() + " ms" : "FAILED: see " + logs.resolve("chaos-report.json"));
        return passed ? 0 : 1;
    }
}
