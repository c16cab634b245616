package io.clawfleet.shared.config;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.clawfleet.shared.config.ClawfleetConfig.Role;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.schedule.Schedule;
import io.clawfleet.shared.security.Cidr;
import io.clawfleet.shared.security.EgressGuard;
import io.clawfleet.shared.security.MasterKeys;
import io.clawfleet.shared.security.SecretException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Optional;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Builds a {@link ClawfleetConfig} from an optional YAML file, the environment and command-line
 * overrides. All problems are reported together, each naming its key and the expected form.
 */
public final class ConfigLoader {

    /** Environment variable naming the YAML config file. */
    public static final String CONFIG_FILE_ENV = "CLAWFLEET_CONFIG";

    private static final Pattern NODE_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
    private static final Pattern MEMBER = Pattern.compile("[A-Za-z0-9._\\-\\[\\]:]+");

    private ConfigLoader() {
    }

    /** Loads with the process environment; {@code file} may be null. */
    public static ClawfleetConfig load(Path file, Map<String, String> overrides) {
        return load(file, System.getenv(), overrides);
    }

    public static ClawfleetConfig load(Path file, Map<String, String> env, Map<String, String> overrides) {
        return load(file, env, overrides, Map.of());
    }

    /**
     * @param modeDefaults defaults of a mode (all-in-one binds to loopback, say); the file, the
     *                     environment and the overrides all win over them
     */
    public static ClawfleetConfig load(Path file, Map<String, String> env, Map<String, String> overrides,
                                       Map<String, String> modeDefaults) {
        Path configFile = file;
        if (configFile == null && env.get(CONFIG_FILE_ENV) != null && !env.get(CONFIG_FILE_ENV).isBlank()) {
            configFile = Path.of(env.get(CONFIG_FILE_ENV));
        }
        Map<String, Object> flat = new LinkedHashMap<>(modeDefaults);
        if (configFile != null) {
            flat.putAll(readYaml(configFile));
        }
        ConfigReader reader = new ConfigReader(flat, env, overrides);
        ClawfleetConfig config = build(reader);
        reader.reportUnknownFileKeys();
        if (!reader.problems().isEmpty()) {
            throw new ConfigException(reader.problems());
        }
        return config;
    }

    /** Every key the loader understands, in reading order; docs/CONFIGURATION.md lists each. */
    public static Set<String> knownKeys() {
        ConfigReader reader = new ConfigReader(Map.of(), Map.of(), Map.of());
        build(reader);
        return reader.knownKeys();
    }

    private static ClawfleetConfig build(ConfigReader r) {
        String nodeId = r.string("nodeId", null);
        if (nodeId != null && !NODE_ID.matcher(nodeId).matches()) {
            r.problem("nodeId", "expected 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit, got '" + nodeId + "'");
        }
        Set<Role> roles = roles(r);
        Path dataDir = Path.of(r.string("dataDir", ".clawfleet"));

        String dbUrl = r.string("db.url", null);
        if (dbUrl != null) {
            try {
                DbUrl.parse(dbUrl);
            } catch (IllegalArgumentException e) {
                r.problem("db.url", e.getMessage().startsWith("unknown sslmode") ? e.getMessage()
                        : "expected postgresql://user:password@host:port/database, " + e.getMessage());
            }
        }
        var db = new ClawfleetConfig.Db(dbUrl,
                r.integer("db.poolSize", 8, 1, 512),
                r.longValue("db.connectTimeoutMs", 5_000, 100, 600_000));

        List<String> members = r.list("cluster.members", List.of());
        for (String member : members) {
            if (!MEMBER.matcher(member).matches()) {
                r.problem("cluster.members", "expected host[:port],host[:port],..., got member '" + member + "'");
            }
        }
        String clusterSecret = r.string("cluster.secret", null);
        if (clusterSecret != null && clusterSecret.length() < io.clawfleet.shared.bus.BusSigner.MIN_SECRET_LENGTH) {
            // The value itself is never echoed: it is a secret even when it is a bad one.
            r.problem("cluster.secret", "must be at least " + io.clawfleet.shared.bus.BusSigner.MIN_SECRET_LENGTH
                    + " characters, got " + clusterSecret.length() + " (generate one with: openssl rand -hex 32)");
        }
        if (r.string("cluster.kubernetesServiceDns", null) != null && (!members.isEmpty() || r.bool("cluster.multicast", false)
                || r.string("cluster.kubernetesServiceName", null) != null)) {
            r.problem("cluster.kubernetesServiceDns", "finds the other members by itself: leave cluster.members, "
                    + "cluster.multicast and cluster.kubernetesServiceName unset with it");
        }
        var cluster = new ClawfleetConfig.Cluster(
                r.string("cluster.name", "clawfleet"),
                r.string("cluster.host", "127.0.0.1"),
                r.integer("cluster.port", 5701, 0, 65535),
                members,
                r.bool("cluster.multicast", false),
                r.string("cluster.kubernetesServiceName", null),
                r.string("cluster.kubernetesNamespace", null),
                r.string("cluster.kubernetesServiceDns", null),
                r.integer("cluster.eventBusPort", 0, 0, 65535),
                clusterSecret,
                Optional.ofNullable(r.string("cluster.tls.dir", null)).map(Path::of).orElse(null),
                Optional.ofNullable(r.string("cluster.tls.trustFile", null)).map(Path::of).orElse(null),
                r.bool("cluster.insecure", false));
        if (cluster.insecure() && cluster.tlsDir() != null) {
            r.problem("cluster.insecure", "cannot be set together with cluster.tls.dir: choose TLS or --insecure-cluster");
        }
        if (cluster.tlsTrustFile() != null && cluster.tlsDir() == null) {
            r.problem("cluster.tls.trustFile", "needs cluster.tls.dir (the node's own certificate and key)");
        }

        var http = new ClawfleetConfig.Http(
                r.string("http.host", "0.0.0.0"),
                r.integer("http.port", 8080, 0, 65535),
                r.longValue("http.maxBodyBytes", 1_048_576, 1_024, 1_073_741_824),
                r.longValue("http.replyTimeoutMs", 120_000, 100, 3_600_000),
                r.integer("http.maxWaitSeconds", 60, 0, 3_600),
                Optional.ofNullable(r.string("http.tls.cert", null)).map(Path::of).orElse(null),
                Optional.ofNullable(r.string("http.tls.key", null)).map(Path::of).orElse(null),
                r.string("http.management.host", "127.0.0.1"),
                r.integer("http.management.port", 0, 0, 65_535),
                Optional.ofNullable(r.string("http.publicUrl", null)).map(url -> url.strip().replaceAll("/+$", "")).orElse(null));
        if (http.publicUrl() != null && !http.publicUrl().matches("(?i)https?://[^/?#\\s]+(/[^?#\\s]*)?")) {
            r.problem("http.publicUrl", "expected the https:// URL the gateways are reached at, like https://bots.example.com, got '"
                    + http.publicUrl() + "'");
        }
        if (http.managementPort() != 0 && http.managementPort() == http.port()) {
            r.problem("http.management.port", "must differ from http.port (" + http.port() + ")");
        }
        if ((http.tlsCert() == null) != (http.tlsKey() == null)) {
            r.problem(http.tlsCert() == null ? "http.tls.cert" : "http.tls.key",
                    "HTTPS needs both http.tls.cert and http.tls.key (PEM files)");
        }
        for (Path file : java.util.Arrays.asList(http.tlsCert(), http.tlsKey())) {
            if (file != null && !Files.isReadable(file)) {
                r.problem(file.equals(http.tlsCert()) ? "http.tls.cert" : "http.tls.key", file + " cannot be read");
            }
        }

        int partitions = r.integer("partitions", 128, 1, 65_536);
        String apiKey = r.string("apiKey", null);
        if (apiKey != null && apiKey.length() < 16) {
            r.problem("apiKey", "expected at least 16 characters (it is a secret), got " + apiKey.length());
        }

        var llm = LlmConfigReader.read(r);

        long ttl = r.longValue("lease.ttlMs", 3_000, 500, 600_000);
        long renew = r.longValue("lease.renewIntervalMs", 1_000, 100, 300_000);
        if (renew * 2 > ttl) {
            r.problem("lease.renewIntervalMs", "expected at most half of lease.ttlMs (" + ttl + " ms) so one missed renewal does not lose the lease, got " + renew);
        }
        var lease = new ClawfleetConfig.Lease(ttl, renew, r.longValue("lease.handoffTimeoutMs", 10_000, 0, 600_000));

        var worker = new ClawfleetConfig.Worker(
                r.integer("worker.historyMessages", 20, 0, 1_000),
                r.longValue("worker.turnTimeoutMs", 180_000, 1_000, 3_600_000),
                r.integer("worker.maxConcurrentTurns", 16_384, 1, 1_000_000),
                r.integer("worker.maxQueuedPerChat", 256, 1, 100_000),
                r.integer("worker.maxQueuedMessages", 200_000, 100, 100_000_000),
                r.integer("worker.maxTurnStarts", 5, 1, 1_000));

        // Supervised unless the operator chooses otherwise (issue 22): risky calls wait for an admin's approval.
        String autonomy = r.string("agent.autonomy", "supervised");
        if (!autonomy.matches("(?i)read_only|supervised|full")) {
            r.problem("agent.autonomy", "expected read_only, supervised or full, got '" + autonomy + "'");
        }
        String memoryScope = r.string("agent.memoryScope", ClawfleetConfig.Agent.MEMORY_CHAT);
        if (!memoryScope.matches("(?i)chat|global")) {
            r.problem("agent.memoryScope", "expected chat or global, got '" + memoryScope + "'");
        }
        int compactThreshold = r.integer("agent.compactThreshold", 50, 4, 10_000);
        int compactKeep = r.integer("agent.compactKeep", 20, 2, 10_000);
        if (compactKeep >= compactThreshold) {
            r.problem("agent.compactKeep", "must be less than agent.compactThreshold (" + compactThreshold + "), got "
                    + compactKeep);
        }
        var agent = new ClawfleetConfig.Agent(
                r.integer("agent.maxToolIterations", 8, 1, 100),
                r.integer("agent.maxToolOutputChars", 50_000, 100, 10_000_000),
                r.longValue("agent.toolTimeoutMs", 60_000, 100, 3_600_000),
                autonomy.toLowerCase(java.util.Locale.ROOT), compactThreshold, compactKeep,
                memoryScope.toLowerCase(java.util.Locale.ROOT),
                r.longValue("agent.approvalTtlSeconds", 3_600, 30, 7 * 86_400));

        io.vertx.core.json.JsonObject tenantDefaults = new io.vertx.core.json.JsonObject();
        String defaults = r.string("limits.tenantDefaults", "");
        if (!defaults.isBlank()) {
            try {
                tenantDefaults = io.clawfleet.shared.store.TenantLimits.parse(new io.vertx.core.json.JsonObject(defaults));
            } catch (io.vertx.core.json.DecodeException e) {
                r.problem("limits.tenantDefaults", "expected a JSON object of tenant limits such as {\"messagesPerMinute\": 600,"
                        + " \"concurrentTurns\": 8}, got text that is not JSON");
            } catch (IllegalArgumentException e) {
                r.problem("limits.tenantDefaults", e.getMessage());
            }
        }
        var limits = new ClawfleetConfig.Limits(
                r.integer("limits.maxInflightRequests", 4_096, 1, 1_000_000),
                r.integer("limits.chatMessagesPerMinute", 120, 0, 1_000_000),
                r.integer("limits.tenantMessagesPerSecond", 1_000, 0, 10_000_000),
                r.integer("limits.maxUnansweredPerChat", 200, 0, 1_000_000), tenantDefaults);

        var delivery = new ClawfleetConfig.Delivery(
                r.integer("delivery.maxAttempts", 8, 1, 1_000),
                r.longValue("delivery.backoffMs", 1_000, 10, 3_600_000),
                r.longValue("delivery.maxBackoffMs", 300_000, 100, 86_400_000),
                r.longValue("delivery.claimMs", 30_000, 1_000, 3_600_000));

        String telegramUrl = r.string("telegram.apiUrl", "https://api.telegram.org");
        if (!telegramUrl.matches("(?i)https?://.+")) {
            r.problem("telegram.apiUrl", "expected an http:// or https:// URL, got '" + telegramUrl + "'");
        }
        String telegramToken = r.string("telegram.botToken", null);
        if (telegramToken != null && !telegramToken.matches("[0-9]+:[A-Za-z0-9_-]{10,}")) {
            r.problem("telegram.botToken", "expected a Bot API token like 123456:ABC-DEF1234ghIkl (from @BotFather)");
        }
        String quotaNotice = r.string("telegram.quotaNotice", ClawfleetConfig.Telegram.DEFAULT_QUOTA_NOTICE);
        if (quotaNotice.isBlank() || quotaNotice.length() > 1_000) {
            r.problem("telegram.quotaNotice", "expected a text of 1 to 1000 characters, got " + quotaNotice.length());
        }
        var telegram = new ClawfleetConfig.Telegram(telegramToken, telegramUrl.replaceAll("/+$", ""), quotaNotice);

        List<String> egressAllowed = r.list("egress.allowedHosts", List.of()).stream()
                .map(host -> host.strip().toLowerCase(Locale.ROOT)).filter(host -> !host.isEmpty()).toList();
        for (String entry : egressAllowed) {
            if (EgressGuard.isAddressOrBlock(entry)) {
                try {
                    Cidr.parse(entry);
                } catch (IllegalArgumentException e) {
                    r.problem("egress.allowedHosts", e.getMessage());
                }
            } else if (!entry.matches("[a-z0-9._-]+")) {
                r.problem("egress.allowedHosts", "'" + entry + "' is neither a host name, an address nor an address block");
            }
        }
        String operatorKey = r.string("operatorKey", null);
        if (operatorKey != null && operatorKey.length() < 24) {
            r.problem("operatorKey", "expected at least 24 characters (it opens every tenant), got " + operatorKey.length());
        }
        String metricsKey = r.string("metricsKey", null);
        if (metricsKey != null && metricsKey.length() < 24) {
            r.problem("metricsKey", "expected at least 24 characters (it is a secret), got " + metricsKey.length());
        }
        String masterKey = blankIsNone(r.string("masterKey", null));
        String masterKeyFile = blankIsNone(r.string("masterKeyFile", null));
        List<String> masterKeyPrevious = r.list("masterKeyPrevious", List.of()).stream()
                .map(String::strip).filter(key -> !key.isEmpty()).toList();
        MasterKeys masterKeys = MasterKeys.none();
        if (masterKey != null && masterKeyFile != null) {
            r.problem("masterKey", "set either masterKey or masterKeyFile, not both (put older keys in masterKeyPrevious "
                    + "or on the key file's later lines)");
        } else {
            try {
                masterKeys = MasterKeys.configured(masterKey, masterKeyFile == null ? null : Path.of(masterKeyFile),
                        masterKeyPrevious);
            } catch (SecretException e) {
                r.problem(masterKey == null && masterKeyFile != null ? "masterKeyFile" : "masterKey", e.getMessage());
            }
        }
        var security = new ClawfleetConfig.Security(
                r.string("adminBootstrapKey", null),
                r.bool("allowShell", false),
                r.list("allowedShellCommands", List.of()),
                egressAllowed,
                operatorKey,
                metricsKey,
                masterKeys);

        var sandbox = SandboxConfigReader.read(r);
        long longestSandboxCall = sandbox.maxTimeoutMs() + sandbox.queueTimeoutMs();
        if (roles.contains(Role.WORKER) && agent.toolTimeoutMs() < longestSandboxCall) {
            // Otherwise a worker abandons runs the sandbox allows, silently, at its own limit.
            r.problem("agent.toolTimeoutMs", "expected at least sandbox.maxTimeoutMs + sandbox.queueTimeoutMs ("
                    + longestSandboxCall + " ms), the longest a sandbox run may take with its wait for a slot, got "
                    + agent.toolTimeoutMs() + "; raise it, or lower sandbox.maxTimeoutMs");
        }

        return new ClawfleetConfig(nodeId, roles, dataDir, db, cluster, http, partitions, apiKey, llm, lease,
                worker, agent, limits, delivery, telegram, security, sandbox, scheduler(r),
                tenantDeletion(r), mcp(r), retention(r), webhooks(r), observability(r), console(r));
    }

    private static ClawfleetConfig.Observability observability(ConfigReader r) {
        var defaults = ClawfleetConfig.Observability.DEFAULT;
        return new ClawfleetConfig.Observability(logFormat(r),
                r.integer("metrics.maxTenants", defaults.maxTenants(), 1, 100_000),
                r.integer("metrics.maxBots", defaults.maxBots(), 1, 1_000_000));
    }

    private static ClawfleetConfig.Console console(ConfigReader r) {
        var defaults = ClawfleetConfig.Console.DEFAULT;
        String traceUrl = r.string("console.traceUrl", null);
        if (traceUrl != null && (traceUrl.isBlank() || !traceUrl.contains("{traceId}")
                || !(traceUrl.startsWith("https://") || traceUrl.startsWith("http://")))) {
            r.problem("console.traceUrl", "expected an http(s) URL containing {traceId}, e.g. "
                    + "http://jaeger:16686/trace/{traceId}, got '" + traceUrl + "'");
            traceUrl = null;
        }
        return new ClawfleetConfig.Console(r.bool("console.operatorContent", defaults.operatorContent()), traceUrl,
                r.integer("console.liveMs", (int) defaults.liveMs(), 200, 60_000));
    }

    private static String logFormat(ConfigReader r) {
        String format = r.string("log.format", io.clawfleet.shared.logging.LogEncoder.TEXT);
        String problem = io.clawfleet.shared.logging.LogEncoder.check(format);
        if (problem != null) {
            r.problem("log.format", "expected " + io.clawfleet.shared.logging.LogEncoder.TEXT + " or "
                    + io.clawfleet.shared.logging.LogEncoder.JSON + ", got '" + format + "'");
            return io.clawfleet.shared.logging.LogEncoder.TEXT;
        }
        return format.strip().toLowerCase(java.util.Locale.ROOT);
    }

    private static ClawfleetConfig.Webhooks webhooks(ConfigReader r) {
        List<Long> schedule = new java.util.ArrayList<>();
        for (String entry : r.list("webhooks.retryScheduleMs", ClawfleetConfig.Webhooks.DEFAULT_SCHEDULE_MS.stream()
                .map(String::valueOf).toList())) {
            try {
                long ms = Long.parseLong(entry.strip());
                if (ms < 0 || ms > 86_400_000L) {
                    throw new NumberFormatException();
                }
                schedule.add(ms);
            } catch (NumberFormatException e) {
                r.problem("webhooks.retryScheduleMs", "expected waits in milliseconds from 0 to 86400000, separated by commas, got '"
                        + entry.strip() + "'");
            }
        }
        if (schedule.size() > 20) {
            r.problem("webhooks.retryScheduleMs", "expected at most 20 retries, got " + schedule.size());
        }
        return new ClawfleetConfig.Webhooks(schedule,
                r.longValue("webhooks.disableAfterMs", 432_000_000L, 1_000, 31L * 86_400_000),
                r.decimal("webhooks.deliveryDays", 30, ClawfleetConfig.Retention.LEAST_DAYS, 3_650, false));
    }

    private static ClawfleetConfig.Retention retention(ConfigReader r) {
        // Days, in fractions too (0.25 is six hours): an operator may keep finished work for hours, and a soak shows
        // the database flat within the hour. A tenant's own limits are whole days.
        double least = ClawfleetConfig.Retention.LEAST_DAYS;
        double usageDays = r.decimal("retention.usageDays", 400, 35, 3_650, false);
        double usageDetailDays = r.decimal("retention.usageDetailDays", 35, least, 3_650, false);
        if (usageDetailDays > usageDays) {
            r.problem("retention.usageDetailDays", "expected at most retention.usageDays (" + usageDays
                    + "): a usage row past its days is summed into usage, which would be gone already; got " + usageDetailDays);
        }
        return new ClawfleetConfig.Retention(
                r.decimal("retention.inboxDays", 7, least, 3_650, false),
                r.decimal("retention.repliesDays", 7, least, 3_650, false),
                usageDays, usageDetailDays,
                r.decimal("retention.auditDays", 365, least, 3_650, false),
                r.decimal("retention.deadLettersDays", 30, least, 3_650, false),
                r.decimal("retention.transcriptDays", 0, least, 3_650, true),
                r.longValue("retention.intervalMs", 300_000, 1_000, 86_400_000),
                r.integer("retention.batchSize", 1_000, 1, 100_000),
                r.longValue("retention.batchPauseMs", 20, 0, 60_000));
    }

    private static ClawfleetConfig.Mcp mcp(ConfigReader r) {
        List<String> origins = r.list("mcp.allowedOrigins", List.of()).stream().map(String::strip)
                .filter(origin -> !origin.isEmpty()).map(origin -> origin.replaceAll("/+$", "").toLowerCase(Locale.ROOT)).toList();
        for (String origin : origins) {
            if (!origin.matches("https?://[a-z0-9.\\[\\]:-]+")) {
                r.problem("mcp.allowedOrigins", "expected origins like https://app.example.com (scheme, host, optional port), got '"
                        + origin + "'");
            }
        }
        return new ClawfleetConfig.Mcp(origins,
                r.longValue("mcp.sessionIdleSeconds", 86_400, 300, 30L * 86_400),
                r.integer("mcp.maxSessionsPerTenant", 1_000, 1, 1_000_000));
    }

    private static String blankIsNone(String value) {
        return value == null || value.isBlank() ? null : value;
    }

    private static ClawfleetConfig.TenantDeletion tenantDeletion(ConfigReader r) {
        return new ClawfleetConfig.TenantDeletion(
                r.integer("tenantDeletion.batchSize", 1_000, 1, 100_000),
                r.longValue("tenantDeletion.batchPauseMs", 0, 0, 60_000),
                r.longValue("tenantDeletion.leaseMs", 30_000, 1_000, 3_600_000),
                r.longValue("tenantDeletion.scanMs", 5_000, 100, 600_000));
    }

    private static ClawfleetConfig.Scheduler scheduler(ConfigReader r) {
        return new ClawfleetConfig.Scheduler(
                r.longValue("scheduler.tickMs", 1_000, 50, 60_000),
                r.integer("scheduler.batchSize", 100, 1, 10_000),
                r.longValue("scheduler.missedAfterMs", 60_000, 1_000, 86_400_000),
                r.integer("scheduler.maxTasksPerTenant", 1_000, 1, 1_000_000),
                r.integer("scheduler.maxTasksPerChat", 20, 1, 1_000_000),
                r.integer("scheduler.keepRunsPerTask", 100, 1, 100_000),
                r.longValue("scheduler.heartbeatIntervalMs", 1_800_000, 1_000, 86_400_000),
                r.integer("scheduler.heartbeatMaxChars", 8_000, 100, 1_000_000),
                r.longValue("scheduler.minIntervalMs", 60_000, Schedule.MIN_INTERVAL_MS, 86_400_000),
                r.longValue("scheduler.fleetStatsMs", 15_000, 100, 3_600_000));
    }

    private static Set<Role> roles(ConfigReader r) {
        List<String> names = r.list("roles", List.of("gateway", "worker", "sandbox", "scheduler"));
        Set<Role> roles = EnumSet.noneOf(Role.class);
        for (String name : names) {
            try {
                roles.add(Role.valueOf(name.toUpperCase(Locale.ROOT)));
            } catch (IllegalArgumentException e) {
                r.problem("roles", "expected a comma list of gateway, worker, sandbox, scheduler, got '" + name + "'");
            }
        }
        if (roles.isEmpty()) {
            r.problem("roles", "expected at least one of gateway, worker, sandbox, scheduler");
            roles.add(Role.GATEWAY);
        }
        return roles;
    }

    private static Map<String, Object> readYaml(Path file) {
        if (!Files.isRegularFile(file)) {
            throw new ConfigException(List.of("config file " + file.toAbsolutePath() + " does not exist or is not a file"));
        }
        Object tree;
        try {
            tree = new ObjectMapper(new YAMLFactory()).readValue(file.toFile(), Object.class);
        } catch (IOException e) {
            throw new ConfigException(List.of("config file " + file + " is not valid YAML: " + e.getMessage()));
        }
        if (tree == null) {
            return Map.of();
        }
        if (!(tree instanceof Map<?, ?> map)) {
            throw new ConfigException(List.of("config file " + file + " must be a YAML mapping of keys to values"));
        }
        Map<String, Object> flat = new LinkedHashMap<>();
        List<String> problems = new ArrayList<>();
        flatten("", map, flat, problems);
        if (!problems.isEmpty()) {
            throw new ConfigException(problems);
        }
        return flat;
    }

    private static void flatten(String prefix, Map<?, ?> map, Map<String, Object> out, List<String> problems) {
        for (Map.Entry<?, ?> entry : map.entrySet()) {
            String key = prefix + entry.getKey();
            if (entry.getValue() instanceof Map<?, ?> child) {
                flatten(key + ".", child, out, problems);
            } else {
                out.put(key, entry.getValue());
            }
        }
    }
}
