package io.clawfleet.sandbox.exec;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * What this host offers for running untrusted processes: the helper programs (bubblewrap and
 * util-linux's prlimit, setsid, setpriv, kill), whether the node runs as root, and the isolation
 * level that results, found by actually starting a sandbox once.
 *
 * @param isolation     the level runs get
 * @param reason        why it is not bubblewrap, or null
 * @param root          whether the node runs as root (runs then drop to another uid with setpriv)
 * @param tmpfsSize     whether bubblewrap can limit the size of the private /tmp ({@code --size})
 * @param disableUserns whether bubblewrap can forbid nested user namespaces ({@code --disable-userns})
 * @param egress        how runs granted egress reach the internet: {@code setsid pasta ip sh}, the programs of
 *                      their own network namespace ({@link EgressNamespace}), then options for pasta; null when
 *                      this host cannot give them one, and they then run without network
 * @param egressReason  why runs granted egress get no network here, or null
 */
public record HostSupport(Isolation isolation, String reason, String bwrap, String prlimit, String setsid, String setpriv,
                          String kill, boolean root, boolean tmpfsSize, boolean disableUserns, List<String> egress,
                          String egressReason) {

    public HostSupport {
        egress = egress == null ? null : List.copyOf(egress);
    }

    /** A host whose runs granted egress get no network (it was not checked, or cannot give them their own). */
    public HostSupport(Isolation isolation, String reason, String bwrap, String prlimit, String setsid, String setpriv,
                       String kill, boolean root, boolean tmpfsSize, boolean disableUserns) {
        this(isolation, reason, bwrap, prlimit, setsid, setpriv, kill, root, tmpfsSize, disableUserns, null,
                "egress isolation was not checked");
    }

    private static final Logger LOG = LoggerFactory.getLogger(HostSupport.class);
    private static final List<String> SYSTEM_DIRS = List.of("/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin");
    private static final long PROBE_SECONDS = 10;

    /**
     * Finds what the host offers.
     *
     * @param setting  {@code auto}, {@code bubblewrap} or {@code process}
     * @param runAsUid uid runs drop to when the node is root
     * @throws IllegalStateException when {@code bubblewrap} is demanded and does not work here
     */
    public static HostSupport detect(String setting, int runAsUid, int runAsGid) {
        if (!Files.isDirectory(Path.of("/proc/self"))) {
            return refuse(setting, none("this is not Linux (no /proc); shell_exec and code skills need a Linux sandbox host"));
        }
        boolean root = isRoot();
        String prlimit = find("prlimit");
        String setsid = find("setsid");
        String kill = find("kill");
        String setpriv = find("setpriv");
        if (prlimit == null || setsid == null || kill == null) {
            return refuse(setting, none("util-linux is missing (prlimit, setsid, kill); install it to run shell_exec and code skills"));
        }
        if (root && setpriv == null) {
            return refuse(setting, none("the node runs as root and setpriv (util-linux) is missing, so runs cannot drop root"));
        }
        String bwrap = find("bwrap");
        if ("process".equals(setting)) {
            return new HostSupport(Isolation.PROCESS, "sandbox.isolation is process", null, prlimit, setsid, setpriv, kill, root,
                    false, false);
        }
        String problem = bwrap == null ? "bubblewrap (bwrap) is not installed" : probe(bwrap, root, setpriv, runAsUid, runAsGid);
        if (problem != null) {
            refuse(setting, none(problem));
            return withoutBubblewrap(problem);
        }
        String help = helpText(bwrap);
        boolean disableUserns = help.contains("--disable-userns");
        List<String> egress = List.of(setsid, Objects.requireNonNullElse(find("pasta"), ""),
                Objects.requireNonNullElse(find("ip"), ""), Objects.requireNonNullElse(find("sh"), ""));
        String egressProblem = "pasta (package passt) or ip (package iproute2) is not installed";
        if (!egress.contains("")) {
            Probe probe = probeEgress(egress, bwrap, kill, root, setpriv, runAsUid, runAsGid, disableUserns);
            egressProblem = probe.problem();
            if (egressProblem == null && probe.output().contains("IPv6")) {
                // No IPv6 route on this host: pasta says so on every run's stderr unless it is told to do IPv4 only.
                List<String> ipv4 = new ArrayList<>(egress);
                ipv4.add("--ipv4-only");
                if (probeEgress(ipv4, bwrap, kill, root, setpriv, runAsUid, runAsGid, disableUserns).problem() == null) {
                    egress = ipv4;
                }
            }
        }
        return new HostSupport(Isolation.BUBBLEWRAP, null, bwrap, prlimit, setsid, setpriv, kill, root,
                help.contains("--size"), disableUserns, egressProblem == null ? egress : null, egressProblem);
    }

    /** Whether runs granted egress get their own network namespace with internet ({@link EgressNamespace}). */
    public boolean isolatesEgress() {
        return egress != null;
    }

    private static boolean tunClosedToOthers() {
        try {
            var mode = Files.getPosixFilePermissions(Path.of("/dev/net/tun"));
            return !mode.contains(java.nio.file.attribute.PosixFilePermission.OTHERS_READ)
                    || !mode.contains(java.nio.file.attribute.PosixFilePermission.OTHERS_WRITE);
        } catch (IOException | UnsupportedOperationException e) {
            return false;
        }
    }

    /**
     * Starts a do-nothing sandbox with egress the way runs with egress start: null when it works, else why
     * not. A failure here leaves such runs without network, never on the host's network.
     */
    private static Probe probeEgress(List<String> egress, String bwrap, String kill, boolean root, String setpriv,
                                      int uid, int gid, boolean disableUserns) {
        List<String> inner = new ArrayList<>(List.of(bwrap, "--unshare-all"));
        if (disableUserns) {
            inner.addAll(List.of("--unshare-user", "--disable-userns"));
        }
        inner.addAll(List.of("--share-net", "--die-with-parent", "--new-session", "--cap-drop", "ALL"));
        inner.addAll(SystemMounts.args());
        inner.addAll(List.of("--proc", "/proc", "--dev", "/dev", "--", "true"));
        List<String> command = new ArrayList<>();
        if (root) {
            command.addAll(dropRoot(setpriv, uid, gid));
        }
        command.addAll(EgressNamespace.wrap(egress, inner));
        Probe probe = runProbe(command, "pasta", kill);
        return probe.problem() == null || !tunClosedToOthers() ? probe : new Probe(probe.problem()
                + "; /dev/net/tun must be readable and writable by the runs' uid (mode 0666, as udev sets it)", probe.output());
    }

    /**
     * What {@code auto} (or {@code bubblewrap}, which then refuses to start) finds where bubblewrap does not
     * work: no programs at all. The weaker {@code process} level is only ever chosen by name, because a
     * silent fallback gave runs the host's network and loopback, the database included (issue 22).
     */
    public static HostSupport withoutBubblewrap(String problem) {
        return none(problem + "; shell_exec, code skills and MCP servers are refused on this node. Install bubblewrap, "
                + "or set sandbox.isolation=process to run them with process limits only (development; docs/SANDBOX.md)");
    }

    private static HostSupport none(String reason) {
        return new HostSupport(Isolation.NONE, reason, null, null, null, null, null, false, false, false);
    }

    private static HostSupport refuse(String setting, HostSupport found) {
        if ("bubblewrap".equals(setting) && found.isolation() != Isolation.BUBBLEWRAP) {
            throw new IllegalStateException("sandbox.isolation is bubblewrap, but bubblewrap does not work on this host: "
                    + found.reason() + ". Install bubblewrap and allow unprivileged user namespaces (docs/SANDBOX.md)");
        }
        return found;
    }

    /** Prefix that makes a root node's run drop to {@code uid:gid}, or nothing. */
    public List<String> dropRoot(int uid, int gid) {
        return root ? dropRoot(setpriv, uid, gid) : List.of();
    }

    private static List<String> dropRoot(String setpriv, int uid, int gid) {
        return List.of(setpriv, "--reuid=" + uid, "--regid=" + gid, "--clear-groups", "--");
    }

    /**
     * Whether the sandbox still works as it did at start: null when it does (or there is nothing to
     * check at this level), else why not. Blocking, a few milliseconds.
     */
    public String recheck(int runAsUid, int runAsGid) {
        return isolation == Isolation.BUBBLEWRAP ? probe(bwrap, root, setpriv, runAsUid, runAsGid) : null;
    }

    /**
     * Whether runs granted egress still get their own network as they did at start: null when they do (or
     * this host never gave them one), else why not. Blocking, about a tenth of a second.
     */
    public String recheckEgress(int runAsUid, int runAsGid) {
        return isolatesEgress() ? probeEgress(egress, bwrap, kill, root, setpriv, runAsUid, runAsGid, disableUserns).problem() : null;
    }

    /** Starts a do-nothing sandbox the way runs start: null when it works, else why not. */
    private static String probe(String bwrap, boolean root, String setpriv, int uid, int gid) {
        List<String> command = new ArrayList<>();
        if (root) {
            command.addAll(dropRoot(setpriv, uid, gid));
        }
        command.addAll(List.of(bwrap, "--unshare-all", "--die-with-parent", "--new-session"));
        command.addAll(SystemMounts.args());
        command.addAll(List.of("--proc", "/proc", "--dev", "/dev", "--", "true"));
        String problem = runProbe(command, "bubblewrap", null).problem();
        return problem == null || problem.startsWith("bubblewrap did not") || problem.startsWith("bubblewrap could not")
                || problem.startsWith("interrupted") ? problem : problem + "; unprivileged user namespaces may be disabled";
    }

    /**
     * Runs a probe to its end (or {@link #PROBE_SECONDS}); its output goes to a file, not a pipe, because a
     * failing pasta leaves its namespace child behind holding whatever it inherited. With {@code killGroup}
     * the probe leads a process group of its own (setsid), which is killed afterwards, such leftovers included.
     */
    /** What a probe found: null or why the sandbox does not work, and what it printed. */
    private record Probe(String problem, String output) {
    }

    private static Probe runProbe(List<String> command, String program, String kill) {
        Path output = null;
        try {
            output = Files.createTempFile("clawfleet-probe", ".txt");
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(output.toFile()).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
            builder.environment().clear();
            builder.environment().put("PATH", "/usr/bin:/bin");
            Process process = builder.start();
            try {
                if (!process.waitFor(PROBE_SECONDS, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                    return new Probe(program + " did not start a sandbox within " + PROBE_SECONDS + " s", "");
                }
            } finally {
                if (kill != null) {
                    killGroup(kill, process.pid());
                }
            }
            String text = Files.readString(output, StandardCharsets.UTF_8).strip();
            return new Probe(process.exitValue() == 0 ? null
                    : program + " cannot create a sandbox here (" + (text.isEmpty() ? "exit " + process.exitValue() : text) + ")",
                    text);
        } catch (IOException e) {
            return new Probe(program + " could not be started: " + e.getMessage(), "");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Probe("interrupted while trying " + program, "");
        } finally {
            if (output != null) {
                try {
                    Files.deleteIfExists(output);
                } catch (IOException e) {
                    LOG.debug("cannot remove a probe's output file {}: {}", output, e.toString());
                }
            }
        }
    }

    /** Kills process group {@code pgid}; there may be nothing left in it. */
    static void killGroup(String kill, long pgid) throws InterruptedException {
        try {
            Process killer = new ProcessBuilder(kill, "-KILL", "--", "-" + pgid).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            killer.waitFor(2, TimeUnit.SECONDS);
        } catch (IOException e) {
            LOG.warn("cannot signal a process group [pgid: {}]: {}", pgid, e.toString());
        }
    }

    private static String helpText(String bwrap) {
        try {
            Process process = new ProcessBuilder(bwrap, "--help").redirectErrorStream(true).start();
            process.getOutputStream().close();
            String text = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            process.waitFor(PROBE_SECONDS, TimeUnit.SECONDS);
            return text;
        } catch (IOException e) {
            return "";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        }
    }

    static boolean isRoot() {
        try {
            return ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:uid")).intValue() == 0;
        } catch (IOException | UnsupportedOperationException e) {
            LOG.warn("cannot tell whether this node runs as root; assuming it does: {}", e.toString());
            return true;
        }
    }

    /** An executable in the system folders first, then on PATH; null when there is none. */
    static String find(String name) {
        List<String> dirs = new ArrayList<>(SYSTEM_DIRS);
        String path = System.getenv("PATH");
        if (path != null) {
            dirs.addAll(List.of(path.split(":")));
        }
        for (String dir : dirs) {
            if (dir.isEmpty()) {
                continue;
            }
            Path candidate = Path.of(dir, name);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return candidate.toString();
            }
        }
        return null;
    }

    /** The facts for /readyz. */
    public Map<String, Object> describe() {
        Map<String, Object> facts = new java.util.LinkedHashMap<>();
        facts.put("isolation", isolation.id());
        facts.put("root", root);
        if (reason != null) {
            facts.put("reason", reason);
        }
        if (isolation == Isolation.BUBBLEWRAP) {
            // Runs granted egress: in a network namespace of their own, or without network.
            facts.put("egress", isolatesEgress() ? "own-namespace" : "none");
            if (!isolatesEgress()) {
                facts.put("egressReason", egressReason);
            }
        }
        return facts;
    }
}
