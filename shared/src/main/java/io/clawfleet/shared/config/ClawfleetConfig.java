package io.clawfleet.shared.config;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Everything a Clawfleet node is configured with. Every key is documented in docs/CONFIGURATION.md
 * with its default and unit; {@link ConfigLoader} builds and validates it.
 *
 * @param nodeId     stable id of this node in leases, logs and metrics; null means "derive one"
 * @param roles      the roles this JVM carries: gateway, worker, sandbox, scheduler
 * @param partitions partition count P; used only when the cluster's database is created
 * @param apiKey     API key of the default tenant; null means none (node) or generated (up)
 */
public record ClawfleetConfig(
        String nodeId,
        Set<Role> roles,
        Path dataDir,
        Db db,
        Cluster cluster,
        Http http,
        int partitions,
        String apiKey,
        Llm llm,
        Lease lease,
        Worker worker,
        Agent agent,
        Limits limits,
        Delivery delivery,
        Telegram telegram,
        Security security,
        Sandbox sandbox,
        Scheduler scheduler,
        TenantDeletion tenantDeletion,
        Mcp mcp,
        Retention retention,
        Webhooks webhooks,
        Observability observability,
        Console console) {

    /**
     * The operator console at {@code /console} (docs/OPERATIONS.md#the-operator-console).
     *
     * @param operatorContent whether the operator's key may read tenants' chat content there (transcripts, dead
     *                        letters' text, tool arguments); off by default, and every view of content is audited
     * @param traceUrl        a link to a trace in the operator's tracing UI, {@code {traceId}} replaced (Jaeger:
     *                        {@code http://jaeger:16686/trace/{traceId}}); null: trace ids are shown as text
     * @param liveMs          how often a console's live stream looks for changes to send
     */
    public record Console(boolean operatorContent, String traceUrl, long liveMs) {
        public static final Console DEFAULT = new Console(false, null, 1_000);
    }

    /**
     * Logs and metrics (docs/OPERATIONS.md).
     *
     * @param logFormat  {@code text} or {@code json} (one object a line), see LogEncoder
     * @param maxTenants tenants that get a {@code tenant} label of their own in this node's metrics; the ones seen
     *                   after them are counted as {@code _other} (MetricLabels)
     * @param maxBots    bots that get a {@code bot} label of their own in this node's metrics; later ones are {@code _other}
     */
    public record Observability(String logFormat, int maxTenants, int maxBots) {
        public static final Observability DEFAULT = new Observability("text", 100, 500);
    }

    /** The roles a node can carry. */
    public enum Role {
        GATEWAY, WORKER, SANDBOX, SCHEDULER;

        public String id() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /**
     * @param url              {@code postgresql://user:pass@host:port/db}; null in all-in-one mode (embedded)
     * @param poolSize         connections per node
     * @param connectTimeoutMs how long one connection attempt may take
     */
    public record Db(String url, int poolSize, long connectTimeoutMs) {
    }

    /**
     * @param host       address the event bus and Hazelcast bind to and advertise
     * @param port       Hazelcast member port
     * @param members    seed members {@code host[:port]} for TCP-IP join
     * @param multicast  join by multicast instead (off by default)
     * @param kubernetesServiceName when set, join through the Kubernetes API (DNS-less discovery)
     * @param kubernetesServiceDns  when set, join the members whose addresses this DNS name (a headless service)
     *                              resolves to: Hazelcast's Kubernetes DNS discovery, no API access needed
     * @param secret     the cluster secret that signs calls, results and stream chunks on the event bus
     *                   ({@code CLAWFLEET_CLUSTER_SECRET}); null = none (a random one when the node runs alone)
     * @param tlsDir     folder with the node's event-bus certificate ({@code tls.crt}, {@code tls.key}, {@code ca.crt});
     *                   null = none
     * @param tlsTrustFile the CA certificates to trust instead of {@code tlsDir/ca.crt}; null = that file
     * @param insecure   a clustered node may run its event bus without TLS ({@code --insecure-cluster}); off by default
     */
    public record Cluster(String name, String host, int port, List<String> members, boolean multicast,
                          String kubernetesServiceName, String kubernetesNamespace, String kubernetesServiceDns,
                          int eventBusPort, String secret, Path tlsDir, Path tlsTrustFile, boolean insecure) {

        /** Never prints the secret. */
        @Override
        public String toString() {
            return "Cluster[name=" + name + ", host=" + host + ", port=" + port + ", members=" + members + ", multicast="
                    + multicast + ", kubernetesServiceName=" + kubernetesServiceName + ", kubernetesNamespace="
                    + kubernetesNamespace + ", kubernetesServiceDns=" + kubernetesServiceDns + ", eventBusPort=" + eventBusPort
                    + ", secret=" + (secret == null ? "none" : "[redacted]") + ", tlsDir=" + tlsDir + ", tlsTrustFile="
                    + tlsTrustFile + ", insecure=" + insecure + "]";
        }
    }

    /**
     * @param maxBodyBytes      largest accepted request body; larger is refused with 413
     * @param replyTimeoutMs    how long {@code /v1/chat/completions} waits for the reply
     * @param maxWaitSeconds    longest long poll a client may ask for
     * @param tlsCert           PEM certificate chain of an HTTPS listener; null = plain HTTP (behind a TLS proxy)
     * @param tlsKey            its PKCS#8 PEM key
     * @param managementHost    the interface of the management listener (a private one; default loopback)
     * @param managementPort    a second listener that serves {@code /metrics}, {@code /livez} and {@code /readyz}
     *                          without a key, for Prometheus and probes on a private network; 0 = none
     * @param publicUrl         the https:// URL the gateways are reached at from the internet (their load balancer),
     *                          without a trailing slash: webhooks given to platforms start with it; null = none set,
     *                          and a channel cannot be switched to webhook mode
     */
    public record Http(String host, int port, long maxBodyBytes, long replyTimeoutMs, int maxWaitSeconds,
                       Path tlsCert, Path tlsKey, String managementHost, int managementPort, String publicUrl) {

        /** Whether the listener speaks HTTPS ({@code http.tls.cert} and {@code http.tls.key}). */
        public boolean tls() {
            return tlsCert != null;
        }
    }

    /**
     * The language models. The {@code llm.*} endpoint keys describe the provider named
     * {@value #DEFAULT_PROVIDER}; {@code llm.providers.<name>.*} add named providers; {@code llm.roles.<role>}
     * give each role its fallback chain of providers.
     *
     * @param type              API of the default provider
     * @param baseUrl           endpoint of the default provider, e.g. {@code https://api.openai.com/v1};
     *                          null = no default provider
     * @param timeoutMs         one model request attempt, end to end, in ms (also the named providers' default)
     * @param maxRetries        retries on 408, 429, 5xx and connection failures, with exponential backoff
     * @param retryBackoffMs    first backoff in ms; doubles per retry
     * @param maxTokens         longest answer in tokens, for APIs that require a limit (Anthropic)
     * @param circuitFailures   consecutive failures after which a provider is skipped
     * @param circuitCooldownMs how long a skipped provider waits, in ms, before one trial call
     * @param providers         the named providers by name (never {@value #DEFAULT_PROVIDER})
     * @param roles             each role's providers, tried in order; always holds {@value #DEFAULT_ROLE},
     *                          whose empty chain means no model is configured
     */
    public record Llm(ProviderType type, String baseUrl, String apiKey, String model, long timeoutMs, int maxRetries,
                      long retryBackoffMs, int maxTokens, int circuitFailures, long circuitCooldownMs,
                      Map<String, ModelProvider> providers, Map<String, List<String>> roles,
                      Map<String, io.clawfleet.shared.provider.BotProviders.Price> prices) {

        /** The provider the {@code llm.*} endpoint keys describe. */
        public static final String DEFAULT_PROVIDER = "default";
        /** The role used when a caller names none. */
        public static final String DEFAULT_ROLE = "default";

        public Llm {
            prices = Map.copyOf(prices);
            providers = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(providers));
            var chains = new java.util.LinkedHashMap<String, List<String>>();
            roles.forEach((role, chain) -> chains.put(role, List.copyOf(chain)));
            roles = java.util.Collections.unmodifiableMap(chains);
        }

        /** Whether any model is configured; if not, every reply says so. */
        public boolean configured() {
            return !roles.getOrDefault(DEFAULT_ROLE, List.of()).isEmpty();
        }

        /** The provider of the {@code llm.*} keys, or null when {@code llm.baseUrl} is unset. */
        public ModelProvider defaultProvider() {
            if (baseUrl == null || baseUrl.isBlank()) {
                return null;
            }
            return new ModelProvider(DEFAULT_PROVIDER, type, baseUrl, apiKey, model, timeoutMs, maxRetries,
                    retryBackoffMs, maxTokens);
        }

        @Override
        public String toString() {
            return "Llm[type=" + type + ", baseUrl=" + baseUrl + ", model=" + model + ", apiKey="
                    + (apiKey == null ? "none" : "[redacted]") + ", providers=" + providers.values() + ", roles=" + roles + "]";
        }
    }

    /** The API a model provider speaks. */
    public enum ProviderType {
        /** OpenAI Chat Completions, and every endpoint compatible with it. */
        OPENAI,
        /** Anthropic's native Messages API. */
        ANTHROPIC;

        public String id() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /**
     * One named model provider ({@code llm.providers.<name>.*}).
     *
     * @param timeoutMs      one request attempt, end to end, in ms
     * @param retryBackoffMs first backoff in ms; doubles per retry
     * @param maxTokens      longest answer in tokens, for APIs that require a limit
     */
    public record ModelProvider(String name, ProviderType type, String baseUrl, String apiKey, String model,
                                long timeoutMs, int maxRetries, long retryBackoffMs, int maxTokens) {

        @Override
        public String toString() {
            return "ModelProvider[name=" + name + ", type=" + type.id() + ", baseUrl=" + baseUrl + ", model=" + model
                    + ", apiKey=" + (apiKey == null ? "none" : "[redacted]") + "]";
        }
    }

    /**
     * @param ttlMs            a lease not renewed for this long may be taken by another worker
     * @param renewIntervalMs  how often an owner renews all its leases (one statement)
     * @param handoffTimeoutMs how long a handoff waits for turns in flight before abandoning them
     */
    public record Lease(long ttlMs, long renewIntervalMs, long handoffTimeoutMs) {
    }

    /**
     * @param historyMessages    recent messages put in a model request
     * @param turnTimeoutMs      one whole turn (model calls and tools) may take this long
     * @param maxConcurrentTurns turns in flight at once on one worker
     * @param maxQueuedPerChat   pending messages one chat keeps in worker memory; the rest wait in the inbox
     * @param maxQueuedMessages  pending messages all chats of a worker keep in memory; the rest wait in the inbox
     * @param maxTurnStarts      a message whose turn this many owners started and none finished (each died, or lost
     *                           the partition, mid-turn) is dead-lettered, with an error reply, instead of started again
     */
    public record Worker(int historyMessages, long turnTimeoutMs, int maxConcurrentTurns, int maxQueuedPerChat,
                         int maxQueuedMessages, int maxTurnStarts) {
    }

    /**
     * The agent's behaviour in a turn.
     *
     * @param maxToolIterations  model calls with tool use per turn before the turn gives up (seed 000 §6.2)
     * @param maxToolOutputChars longest tool result given to the model; the rest is cut with a note
     * @param toolTimeoutMs      one tool call may take this long
     * @param autonomy           read_only, supervised or full: how freely tools that change things run
     * @param compactThreshold   stored messages not yet compacted beyond which a chat is compacted
     * @param compactKeep        messages a compaction keeps verbatim; older ones are folded into memory
     * @param memoryScope        where consolidation writes: chat (the chat's own files) or global
     * @param approvalTtlSeconds how long a call waits for an admin's approval before no approval is taken
     */
    public record Agent(int maxToolIterations, int maxToolOutputChars, long toolTimeoutMs, String autonomy,
                        int compactThreshold, int compactKeep, String memoryScope, long approvalTtlSeconds) {

        public static final String MEMORY_CHAT = "chat";
        public static final String MEMORY_GLOBAL = "global";
    }

    /**
     * Admission limits of a gateway; 0 turns a limit off. Rate limits are enforced by each gateway
     * on its own, so a cluster admits up to the limit times the number of gateways.
     *
     * @param maxInflightRequests     intake requests in progress at once; beyond: 503 with Retry-After
     * @param chatMessagesPerMinute   messages one chat may send per minute; beyond: 429 with Retry-After
     * @param tenantMessagesPerSecond messages one tenant may send per second; beyond: 429 with Retry-After
     * @param maxUnansweredPerChat    accepted but unanswered messages one chat may have; beyond: 429
     * @param tenantDefaults          the operator's limits of a new tenant (TenantLimits names, checked like them),
     *                                copied into each tenant created through the operator's API where its request
     *                                does not set them; empty: none
     */
    public record Limits(int maxInflightRequests, int chatMessagesPerMinute, int tenantMessagesPerSecond,
                         int maxUnansweredPerChat, io.vertx.core.json.JsonObject tenantDefaults) {

        public Limits(int maxInflightRequests, int chatMessagesPerMinute, int tenantMessagesPerSecond, int maxUnansweredPerChat) {
            this(maxInflightRequests, chatMessagesPerMinute, tenantMessagesPerSecond, maxUnansweredPerChat,
                    new io.vertx.core.json.JsonObject());
        }
    }

    /**
     * Delivery of push-channel replies (Telegram).
     *
     * @param maxAttempts   sends before a reply becomes a dead letter
     * @param backoffMs     wait before the second attempt; doubles per attempt, with full jitter
     * @param maxBackoffMs  longest wait between attempts
     * @param claimMs       a gateway's hold on a reply it is sending; past it another gateway may send it
     */
    public record Delivery(int maxAttempts, long backoffMs, long maxBackoffMs, long claimMs) {
    }

    /**
     * Signed outbound webhooks (docs/CHANNELS.md#signed-webhooks).
     *
     * @param retryScheduleMs how long to wait before each try after the first (which is at once); a delivery still failing
     *                        after the last is failed for good
     * @param disableAfterMs  an endpoint none of whose deliveries has succeeded for this long is turned off (audited)
     * @param deliveryDays    how long finished deliveries are kept to list and inspect
     */
    public record Webhooks(List<Long> retryScheduleMs, long disableAfterMs, double deliveryDays) {

        /** Standard Webhooks' suggested schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (about 28 hours in all). */
        public static final List<Long> DEFAULT_SCHEDULE_MS = List.of(5_000L, 300_000L, 1_800_000L, 7_200_000L, 18_000_000L,
                36_000_000L, 36_000_000L);

        public Webhooks {
            retryScheduleMs = List.copyOf(retryScheduleMs);
        }
    }

    /**
     * The default tenant's Telegram bot, registered at gateway start when a token is given (more
     * bots, for any tenant, through {@code POST /api/v1/channels/telegram}).
     *
     * @param apiUrl      the Bot API base URL (an emulator in tests)
     * @param quotaNotice what a chat is told, once per quota period, when its bot's tenant is over a quota and its
     *                    messages are kept for later
     */
    public record Telegram(String botToken, String apiUrl, String quotaNotice) {

        public static final String DEFAULT_QUOTA_NOTICE = "This bot has reached its usage limit for now. Your message is "
                + "saved and will be answered once the limit resets.";

        public Telegram(String botToken, String apiUrl) {
            this(botToken, apiUrl, DEFAULT_QUOTA_NOTICE);
        }
    }

    /**
     * @param adminBootstrapKey    key that makes a chat its first admin (seed 000 §12.3)
     * @param allowShell           whether {@code shell_exec} may run at all
     * @param allowedShellCommands executables {@code shell_exec} may run; empty = any
     * @param egressAllowedHosts   hosts (names, lower case) and address blocks (CIDR) that URLs a tenant gives the
     *                             gateway (a bot's Telegram API URL) may reach although they are private, loopback or
     *                             link-local; empty = none, only public addresses
     * @param operatorKey          the operator's key for {@code /admin/v1/*} (tenants, their keys); null = the operator
     *                             API is closed
     * @param metricsKey           a key that reads {@code /metrics} on the public port (so does the operator key);
     *                             null = only the operator key or the management port
     * @param masterKeys           the master keys that wrap tenants' data keys (secrets at rest, docs/SECURITY.md):
     *                             {@code masterKey} or the first key of {@code masterKeyFile} is current, the others and
     *                             {@code masterKeyPrevious} only unwrap (during a rotation); none = tenant secrets cannot
     *                             be stored
     */
    public record Security(String adminBootstrapKey, boolean allowShell, List<String> allowedShellCommands,
                           List<String> egressAllowedHosts, String operatorKey, String metricsKey,
                           io.clawfleet.shared.security.MasterKeys masterKeys) {

        @Override
        public String toString() {
            return "Security[allowShell=" + allowShell + ", allowedShellCommands=" + allowedShellCommands
                    + ", egressAllowedHosts=" + egressAllowedHosts + ", adminBootstrapKey="
                    + (adminBootstrapKey == null ? "none" : "[redacted]") + ", operatorKey="
                    + (operatorKey == null ? "none" : "[redacted]") + ", metricsKey="
                    + (metricsKey == null ? "none" : "[redacted]") + ", masterKeys=" + masterKeys.ids() + "]";
        }
    }

    /**
     * The sandbox role: how risky tools run on this node (docs/SANDBOX.md). Workers read the
     * timeouts, egress and circuit settings too, to size and route their calls.
     *
     * @param isolation            {@code auto}, {@code bubblewrap} (required) or {@code process} (rlimits only)
     * @param maxConcurrentWorkers runs at once on one sandbox node (the bulkhead, seed 000 §12.8)
     * @param maxQueued            runs waiting for a slot on one node; beyond it the node answers busy
     * @param queueTimeoutMs       longest a call waits for a slot on one node before that node drops it unstarted and
     *                             the worker asks another, in ms (workers send it with each call)
     * @param shellTimeoutMs       wall-clock limit of one {@code shell_exec} run, in ms
     * @param skillTimeoutMs       wall-clock limit of one code-skill tool run when the tool declares none, in ms
     * @param maxTimeoutMs         the longest wall-clock limit any run may ask for, in ms
     * @param cpuSeconds           CPU time of each process of a run (RLIMIT_CPU), in s
     * @param memoryBytes          data memory of each process of a run (RLIMIT_DATA), in bytes
     * @param maxProcesses         processes and threads a run may have at once (RLIMIT_NPROC)
     * @param maxFileBytes         largest file a run may write (RLIMIT_FSIZE), in bytes
     * @param maxOpenFiles         open files per process (RLIMIT_NOFILE)
     * @param maxOutputBytes       stdout (and, separately, stderr) kept from a run; past it the run is stopped
     * @param maxTransferBytes     workspace files sent with a call, and changed files sent back, in bytes
     * @param allowedEnv           variables of the sandbox node's environment a run may receive
     * @param egress               kinds of run granted network access: {@code shell}, {@code skills}, {@code mcp}
     * @param workDir              where run directories are made; null = the system temporary folder
     * @param runAsUid             uid runs take when the node runs as root
     * @param runAsGid             gid runs take when the node runs as root
     * @param readOnlyPaths        extra host paths visible read-only inside bubblewrap (an interpreter under /opt, say)
     * @param circuitFailures      consecutive sandbox failures of one tool after which workers stop calling it
     * @param circuitCooldownMs    how long a tool's open circuit stays open, in ms
     * @param mcpSessionIdleMs     a warm stdio MCP session (one server process per tenant, bot and server, kept between
     *                             calls) unused this long is stopped, in ms
     * @param mcpSessionMaxLifeMs  a warm stdio MCP session older than this is stopped between two calls, in ms
     * @param mcpMaxSessions       warm stdio MCP sessions one sandbox node keeps; when full, the least recently used idle
     *                             one makes room, and with all busy a call runs in a process of its own; 0 = none
     *                             (every call starts its server and stops it after)
     * @param maxWorkspaceBytes    bytes of regular files a run's writable folders may hold; the node measures them while
     *                             the run runs and stops it past this (RLIMIT_FSIZE caps one file, not how many)
     * @param maxWorkspaceFiles    entries (files, folders, links) a run's writable folders may hold; past it the run is
     *                             stopped, so millions of empty files cannot exhaust the node's inodes
     * @param cgroups              per-run cgroup v2 limits: {@code auto} (where the host delegates cgroup v2),
     *                             {@code required} (refuse to start without) or {@code off}
     * @param cgroupMemoryBytes    memory of a whole run, every process and the tmpfs pages it wrote included
     *                             (cgroup {@code memory.max}), in bytes
     * @param cgroupCpus           CPUs a whole run may use at once (cgroup {@code cpu.max}), 1.0 = one CPU
     */
    public record Sandbox(String isolation, int maxConcurrentWorkers, int maxQueued, long queueTimeoutMs, long shellTimeoutMs,
                          long skillTimeoutMs, long maxTimeoutMs, int cpuSeconds, long memoryBytes, int maxProcesses,
                          long maxFileBytes, int maxOpenFiles, int maxOutputBytes, long maxTransferBytes,
                          List<String> allowedEnv, List<String> egress, String workDir, int runAsUid, int runAsGid,
                          List<String> readOnlyPaths, int circuitFailures, long circuitCooldownMs, long mcpSessionIdleMs,
                          long mcpSessionMaxLifeMs, int mcpMaxSessions, long maxWorkspaceBytes, int maxWorkspaceFiles,
                          String cgroups, long cgroupMemoryBytes, double cgroupCpus, Web web) {

        public Sandbox {
            allowedEnv = List.copyOf(allowedEnv);
            egress = List.copyOf(egress);
            readOnlyPaths = List.copyOf(readOnlyPaths);
        }

        /** Whether runs of this kind ({@code shell}, {@code skills}) may use the network. */
        public boolean egress(String kind) {
            return egress.contains(kind);
        }
    }

    /**
     * {@code web_fetch} and {@code web_search} on sandbox nodes (seed 000 §12.5, seed 003 SSRF protection).
     *
     * @param allowedDomains       hosts {@code web_fetch} may fetch (a domain allows its subdomains); empty = any public host
     * @param allowedPorts         ports {@code web_fetch} may connect to; empty = any not blocked
     * @param blockedPorts         ports it may never connect to
     * @param allowedPrivateRanges addresses the SSRF guard lets through although they are private (CIDRs); DANGEROUS,
     *                             for tests and for an internal proxy you mean to reach
     * @param timeoutMs            one fetch, redirects included, in ms
     * @param maxRedirects         redirects followed, each checked again
     * @param maxResponseBytes     largest response body read, in bytes
     * @param braveApiKeyEnv       the sandbox node's environment variable holding the Brave Search API key
     * @param braveApiUrl          the Brave Search web endpoint
     * @param searchResults        results {@code web_search} returns
     */
    public record Web(List<String> allowedDomains, List<Integer> allowedPorts, List<Integer> blockedPorts,
                      List<String> allowedPrivateRanges, long timeoutMs, int maxRedirects, long maxResponseBytes,
                      String braveApiKeyEnv, String braveApiUrl, int searchResults) {

        public Web {
            allowedDomains = List.copyOf(allowedDomains);
            allowedPorts = List.copyOf(allowedPorts);
            blockedPorts = List.copyOf(blockedPorts);
            allowedPrivateRanges = List.copyOf(allowedPrivateRanges);
        }
    }

    /**
     * Scheduled tasks (seed 000 §10) and the heartbeat (seed 002).
     *
     * @param tickMs              how often a scheduler node looks for due tasks, in ms; a due time that came due
     *                            within a tick is on time and never folded into a catch-up firing
     * @param batchSize           firings one node deals with in one go; a full batch is followed by the next at once
     * @param missedAfterMs       a due time found later than this, in ms, was missed: the task's missed policy applies
     * @param maxTasksPerTenant   tasks that are not done one tenant may have
     * @param maxTasksPerChat     tasks that are not done one chat may have (a chat user steers the model that schedules)
     * @param keepRunsPerTask     finished runs kept per task; older ones are dropped
     * @param heartbeatIntervalMs interval of a heartbeat scheduled without a schedule of its own, in ms
     * @param heartbeatMaxChars   characters of HEARTBEAT.md put into a heartbeat's message; the rest is cut
     * @param minIntervalMs       shortest interval a chat or a tenant may schedule, in ms: each firing is a model call
     */
    public record Scheduler(long tickMs, int batchSize, long missedAfterMs, int maxTasksPerTenant, int maxTasksPerChat,
                            int keepRunsPerTask, long heartbeatIntervalMs, int heartbeatMaxChars, long minIntervalMs,
                            long fleetStatsMs) {
    }

    /**
     * How gateways delete a tenant's rows (issue 13): in batches, each its own short transaction.
     *
     * @param batchSize    rows deleted per statement and transaction; smaller holds row locks shorter
     * @param batchPauseMs wait between two batches, in ms, to leave the database to other work (0: none)
     * @param leaseMs      a gateway's hold on a deletion, in ms, renewed by every batch; past it another gateway carries on
     * @param scanMs       how often a gateway looks for deletions nobody holds, in ms
     */
    public record TenantDeletion(int batchSize, long batchPauseMs, long leaseMs, long scanMs) {
    }

    /**
     * Bots as MCP servers ({@code /mcp/v1/bots/{botId}}, issue 16).
     *
     * @param allowedOrigins        browser origins (scheme://host[:port]) allowed besides loopback ones; a request with any
     *                              other {@code Origin} is refused (DNS rebinding). Clients that send none are not affected.
     * @param sessionIdleSeconds    a session unused this long is dropped; its next request gets 404 and the client starts anew
     * @param maxSessionsPerTenant  open sessions of one tenant at most
     */
    public record Mcp(List<String> allowedOrigins, long sessionIdleSeconds, int maxSessionsPerTenant) {
        public Mcp {
            allowedOrigins = List.copyOf(allowedOrigins);
        }
    }

    /**
     * How long finished work is kept before scheduler nodes prune it (issue 20), in days, and how they prune. Each
     * {@code *Days} is the default a tenant's own limit of the same meaning overrides ({@code TenantLimits}).
     *
     * @param inboxDays       answered (and dead-lettered, once their dead letter is gone) inbound messages; a message
     *                        sent again with the same idempotency key after this is a new message
     * @param repliesDays     delivered replies (and dead ones, once their dead letter is gone) in the outbox; the chat's
     *                        history keeps them for the model
     * @param usageDays       usage: the daily sums of model calls and messages that usage reports and the token
     *                        quotas read; at least 35, a month and its margin
     * @param usageDetailDays each model call's usage row (tokens per chat and per message); past it the row is added to
     *                        its day's sums; at most {@code usageDays}
     * @param auditDays       audit events
     * @param deadLettersDays dead letters, replayed or not
     * @param transcriptDays  a chat's history (the {@code messages} the model sees, and the transcript an export
     *                        holds); 0 keeps it for the life of the chat
     * @param intervalMs      how often a scheduler node prunes
     * @param batchSize       rows deleted per statement (each its own short transaction)
     * @param batchPauseMs    wait between two batches, to leave the database to the hot path
     */
    public record Retention(double inboxDays, double repliesDays, double usageDays, double usageDetailDays,
                            double auditDays, double deadLettersDays, double transcriptDays, long intervalMs, int batchSize,
                            long batchPauseMs) {

        /** The shortest node retention: 60.48 seconds. Days may be fractions; a tenant's own limits are whole days. */
        public static final double LEAST_DAYS = 0.0007;
    }

    public boolean hasRole(Role role) {
        return roles.contains(role);
    }
}
