package io.clawfleet.shared.config;

import io.clawfleet.shared.config.ClawfleetConfig.Sandbox;
import io.clawfleet.shared.config.ClawfleetConfig.Web;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

/** Reads the {@code sandbox} section: isolation, limits, environment, egress, the web policy. */
final class SandboxConfigReader {

    static final Set<String> ISOLATION = Set.of("auto", "bubblewrap", "process");
    static final Set<String> CGROUPS = Set.of("auto", "required", "off");
    static final Set<String> EGRESS = Set.of("shell", "skills", "mcp");
    private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");
    private static final Pattern DOMAIN = Pattern.compile("[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?)*");
    private static final Pattern IP_LITERAL = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*");
    private static final long MIB = 1_048_576;

    private SandboxConfigReader() {
    }

    static Sandbox read(ConfigReader r) {
        String isolation = r.string("sandbox.isolation", "auto").toLowerCase(Locale.ROOT);
        if (!ISOLATION.contains(isolation)) {
            r.problem("sandbox.isolation", "expected auto, bubblewrap or process, got '" + isolation + "'");
        }
        int workers = r.integer("sandbox.maxConcurrentWorkers", 4, 1, 1_024);
        int queued = r.integer("sandbox.maxQueued", 16, 0, 100_000);
        long queueTimeout = r.longValue("sandbox.queueTimeoutMs", 10_000, 1, 600_000);
        long shellTimeout = r.longValue("sandbox.shellTimeoutMs", 30_000, 100, 3_600_000);
        long skillTimeout = r.longValue("sandbox.skillTimeoutMs", 30_000, 100, 3_600_000);
        // 45 s: a worker waits agent.toolTimeoutMs (60 s) for a tool, and a run may first wait sandbox.queueTimeoutMs
        // (10 s) for a slot; a longer run would be cut by the worker while the sandbox still lets it go on.
        long maxTimeout = r.longValue("sandbox.maxTimeoutMs", 45_000, 100, 3_600_000);
        int cpu = r.integer("sandbox.cpuSeconds", 30, 1, 86_400);
        long memory = r.longValue("sandbox.memoryBytes", 512 * MIB, 16 * MIB, 1_099_511_627_776L);
        int processes = r.integer("sandbox.maxProcesses", 64, 1, 100_000);
        long fileBytes = r.longValue("sandbox.maxFileBytes", 16 * MIB, 1_024, 1_099_511_627_776L);
        int openFiles = r.integer("sandbox.maxOpenFiles", 256, 16, 1_048_576);
        int output = r.integer("sandbox.maxOutputBytes", 262_144, 1_024, 64 * 1_048_576);
        long transfer = r.longValue("sandbox.maxTransferBytes", 8 * MIB, 1_024, 256 * MIB);
        List<String> allowedEnv = r.list("sandbox.allowedEnv", List.of());
        for (String name : allowedEnv) {
            if (!ENV_NAME.matcher(name).matches()) {
                r.problem("sandbox.allowedEnv", "expected environment variable names, got '" + name + "'");
            }
        }
        List<String> egress = r.list("sandbox.egress", List.of()).stream().map(e -> e.toLowerCase(Locale.ROOT)).toList();
        for (String kind : egress) {
            if (!EGRESS.contains(kind)) {
                r.problem("sandbox.egress", "expected a comma list of shell, skills, mcp (or nothing), got '" + kind + "'");
            }
        }
        String workDir = r.string("sandbox.workDir", null);
        int uid = r.integer("sandbox.runAsUid", 65_534, 1, Integer.MAX_VALUE);
        int gid = r.integer("sandbox.runAsGid", 65_534, 1, Integer.MAX_VALUE);
        List<String> readOnly = r.list("sandbox.readOnlyPaths", List.of());
        for (String path : readOnly) {
            if (!path.startsWith("/") || path.contains("..")) {
                r.problem("sandbox.readOnlyPaths", "expected absolute paths without '..', got '" + path + "'");
            }
        }
        int circuitFailures = r.integer("sandbox.circuitFailures", 5, 1, 1_000);
        long circuitCooldown = r.longValue("sandbox.circuitCooldownMs", 30_000, 0, 3_600_000);
        // Warm stdio MCP sessions (issue 16): 5 minutes idle, an hour at most, 32 per node.
        long mcpIdle = r.longValue("sandbox.mcpSessionIdleMs", 300_000, 100, 86_400_000);
        long mcpMaxLife = r.longValue("sandbox.mcpSessionMaxLifeMs", 3_600_000, 1_000, 604_800_000);
        int mcpSessions = r.integer("sandbox.mcpMaxSessions", 32, 0, 10_000);
        // 256 MiB and 10,000 entries: far more than the files a call may carry (maxTransferBytes, 2,000 files).
        long workspaceBytes = r.longValue("sandbox.maxWorkspaceBytes", 256 * MIB, MIB, 1_099_511_627_776L);
        int workspaceFiles = r.integer("sandbox.maxWorkspaceFiles", 10_000, 100, 10_000_000);
        if (workspaceBytes < Math.max(fileBytes, transfer)) {
            // A run could not write one file of the size it is allowed, or would be stopped for the files it was given.
            r.problem("sandbox.maxWorkspaceBytes", "expected at least sandbox.maxFileBytes and sandbox.maxTransferBytes ("
                    + Math.max(fileBytes, transfer) + " bytes), got " + workspaceBytes);
        }
        String cgroups = r.string("sandbox.cgroups", "auto").toLowerCase(Locale.ROOT);
        if (!CGROUPS.contains(cgroups)) {
            r.problem("sandbox.cgroups", "expected auto, required or off, got '" + cgroups + "'");
        }
        // Twice one process's data limit: a run is usually a shell and one program, plus the tmpfs pages it wrote.
        long cgroupMemory = r.longValue("sandbox.cgroupMemoryBytes", Math.min(2 * memory, 1_099_511_627_776L), 16 * MIB,
                1_099_511_627_776L);
        double cgroupCpus = cpus(r);
        if (maxTimeout < Math.max(shellTimeout, skillTimeout)) {
            r.problem("sandbox.maxTimeoutMs", "expected at least sandbox.shellTimeoutMs and sandbox.skillTimeoutMs ("
                    + Math.max(shellTimeout, skillTimeout) + " ms), got " + maxTimeout);
        }
        return new Sandbox(isolation, workers, queued, queueTimeout, shellTimeout, skillTimeout, maxTimeout, cpu, memory, processes,
                fileBytes, openFiles, output, transfer, allowedEnv, egress, workDir, uid, gid, readOnly, circuitFailures,
                circuitCooldown, mcpIdle, mcpMaxLife, mcpSessions, workspaceBytes, workspaceFiles, cgroups, cgroupMemory,
                cgroupCpus, web(r));
    }

    /** {@code sandbox.cgroupCpus}: a decimal number of CPUs, 0.01 (the kernel's 1 ms quota per 100 ms) to 1,024. */
    private static double cpus(ConfigReader r) {
        String text = r.string("sandbox.cgroupCpus", "1.0");
        try {
            double cpus = Double.parseDouble(text.strip());
            if (cpus >= 0.01 && cpus <= 1_024) {
                return cpus;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        r.problem("sandbox.cgroupCpus", "expected a number of CPUs from 0.01 to 1024 (1.5 = one and a half), got '" + text + "'");
        return 1.0;
    }

    private static Web web(ConfigReader r) {
        List<String> domains = r.list("sandbox.web.allowedDomains", List.of()).stream()
                .map(d -> d.toLowerCase(Locale.ROOT).replaceAll("^\\*\\.", "").replaceAll("\\.$", "")).toList();
        for (String domain : domains) {
            if (!DOMAIN.matcher(domain).matches()) {
                r.problem("sandbox.web.allowedDomains", "expected host names like example.com (no scheme, port or path), got '"
                        + domain + "'");
            }
        }
        List<Integer> allowedPorts = ports(r, "sandbox.web.allowedPorts", List.of("80", "443"));
        List<Integer> blockedPorts = ports(r, "sandbox.web.blockedPorts", List.of());
        List<String> ranges = r.list("sandbox.web.allowedPrivateRanges", List.of());
        for (String range : ranges) {
            String problem = cidrProblem(range);
            if (problem != null) {
                r.problem("sandbox.web.allowedPrivateRanges", problem);
            }
        }
        long timeout = r.longValue("sandbox.web.timeoutMs", 15_000, 100, 600_000);
        int redirects = r.integer("sandbox.web.maxRedirects", 5, 0, 20);
        long maxBytes = r.longValue("sandbox.web.maxResponseBytes", 2 * MIB, 1_024, 256 * MIB);
        String keyEnv = r.string("sandbox.web.braveApiKeyEnv", "BRAVE_API_KEY");
        if (!ENV_NAME.matcher(keyEnv).matches()) {
            r.problem("sandbox.web.braveApiKeyEnv", "expected an environment variable name, got '" + keyEnv + "'");
        }
        String braveUrl = r.string("sandbox.web.braveApiUrl", "https://api.search.brave.com/res/v1/web/search");
        if (!braveUrl.matches("(?i)https?://.+")) {
            r.problem("sandbox.web.braveApiUrl", "expected an http:// or https:// URL, got '" + braveUrl + "'");
        }
        int results = r.integer("sandbox.web.searchResults", 5, 1, 20);
        return new Web(domains, allowedPorts, blockedPorts, ranges, timeout, redirects, maxBytes, keyEnv, braveUrl, results);
    }

    private static List<Integer> ports(ConfigReader r, String key, List<String> defaults) {
        List<Integer> ports = new ArrayList<>();
        for (String text : r.list(key, defaults)) {
            try {
                int port = Integer.parseInt(text);
                if (port < 1 || port > 65_535) {
                    throw new NumberFormatException();
                }
                ports.add(port);
            } catch (NumberFormatException e) {
                r.problem(key, "expected a comma list of ports from 1 to 65535, got '" + text + "'");
            }
        }
        return ports;
    }

    /** Null when {@code range} is an IP address or a CIDR block written as literals (no DNS), else what is wrong. */
    static String cidrProblem(String range) {
        String[] parts = range.split("/", -1);
        String expected = "expected IP addresses or CIDR blocks like 127.0.0.1/32 or fd00::/8, got '" + range + "'";
        if (parts.length > 2 || !IP_LITERAL.matcher(parts[0]).matches()) {
            return expected;
        }
        try {
            InetAddress address = InetAddress.getByName(parts[0]);
            int bits = address.getAddress().length * 8;
            if (parts.length == 2) {
                int prefix = Integer.parseInt(parts[1]);
                if (prefix < 0 || prefix > bits) {
                    return expected;
                }
            }
            return null;
        } catch (UnknownHostException | NumberFormatException e) {
            return expected;
        }
    }
}
