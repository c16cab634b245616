package io.clawfleet.worker;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.node.NodeContext;
import io.clawfleet.shared.node.NodeRole;
import io.clawfleet.shared.store.ConversationStore;
import io.clawfleet.shared.store.InboxStore;
import io.clawfleet.shared.store.LeaseStore;
import io.clawfleet.worker.llm.LlmProviders;
import io.clawfleet.worker.llm.ModelRouter;
import io.clawfleet.worker.ownership.PartitionOwnership;
import io.clawfleet.worker.sandbox.CodeSkillTools;
import io.clawfleet.worker.sandbox.McpTools;
import io.clawfleet.worker.mcp.RemoteMcpTools;
import io.clawfleet.shared.store.BotMcpServerStore;
import io.clawfleet.worker.sandbox.SandboxClient;
import io.clawfleet.worker.sandbox.SandboxTools;
import io.clawfleet.shared.security.SecretScrubber;
import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.store.ApprovalStore;
import io.clawfleet.shared.store.AuditStore;
import io.clawfleet.shared.store.ChatStore;
import io.clawfleet.shared.store.TaskStore;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.store.TurnStepStore;
import io.clawfleet.worker.tools.Autonomy;
import io.clawfleet.worker.tools.Tool;
import io.clawfleet.worker.tools.ToolPolicy;
import io.clawfleet.worker.tools.ToolCatalog;
import io.clawfleet.worker.tools.ToolRunner;
import io.clawfleet.worker.tools.ToolTimeQuota;
import io.clawfleet.shared.store.UsageStore;
import java.time.Clock;
import io.clawfleet.worker.tools.builtin.ChatTools;
import io.clawfleet.worker.tools.builtin.MemoryTools;
import io.clawfleet.worker.tools.builtin.MessageTools;
import io.clawfleet.worker.tools.builtin.TaskTools;
import io.clawfleet.worker.tools.builtin.SkillTools;
import io.clawfleet.worker.tools.builtin.WorkspaceTools;
import io.clawfleet.worker.workspace.WorkspaceCache;
import io.clawfleet.shared.store.CompactionStore;
import io.clawfleet.shared.store.WorkspaceStore;
import io.clawfleet.worker.turn.AgentLoop;
import io.clawfleet.worker.turn.AgentTurns;
import io.clawfleet.worker.turn.Compactor;
import io.clawfleet.worker.turn.ContextBuilder;
import io.clawfleet.worker.turn.ConversationDispatcher;
import io.clawfleet.worker.turn.TenantSettings;
import io.clawfleet.worker.turn.TimedModel;
import io.clawfleet.worker.turn.TurnHandler;
import io.clawfleet.worker.turn.TurnSlots;
import io.clawfleet.shared.store.TurnSlotStore;
import io.vertx.core.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.BotStore;
import io.clawfleet.shared.store.BotProviderStore;
import io.clawfleet.shared.security.EgressGuard;
import io.clawfleet.shared.security.TenantKeys;
import io.clawfleet.worker.llm.BotModels;

/** Wiring of the worker role: model router, tools, agent loop, dispatcher, partition ownership. */
public final class WorkerRole implements NodeRole {

    private static final Logger LOG = LoggerFactory.getLogger(WorkerRole.class);
    private static final int APPROVALS_LISTED = 100;
    /** Tenants whose prompt files a worker keeps, and single files (chat memories) besides. */
    private static final int WORKSPACE_TENANTS = 10_000;
    private static final int WORKSPACE_FILES = 50_000;
    /** Bots whose own model routers (HTTP clients, circuit breakers) a worker keeps at once. */
    private static final int BOT_ROUTERS = 4_096;
    /** How much longer than a run's own limit its reply may take: copying files in and out, starting bubblewrap. */
    private static final long SANDBOX_REPLY_MARGIN_MS = 15_000;

    /** Turns committed together at most: more per statement gains little and holds share locks longer. */
    private static final int TURN_COMMIT_GROUP = 64;
    /** Turn commit statements under way at once: one, as the gateway's intake ({@code GatewayRole}, PERFORMANCE.md). */
    private static final int TURN_COMMITS_IN_FLIGHT = 1;

    private final AtomicBoolean running = new AtomicBoolean();
    private ModelRouter router;
    private PartitionOwnership ownership;
    private ConversationDispatcher dispatcher;
    private TurnSlots tenantSlots;

    @Override
    public String name() {
        return "worker";
    }

    @Override
    public Future<Void> start(NodeContext ctx) {
        ClawfleetConfig config = ctx.config();
        router = router(ctx);
        var pool = ctx.database().pool();
        // Turns that finish while others are being committed are committed together (group commit).
        ConversationStore conversations = ConversationStore.grouped(ctx.vertx(), pool, TURN_COMMIT_GROUP,
                TURN_COMMITS_IN_FLIGHT);
        SecretScrubber scrubber = new SecretScrubber(knownSecrets(config));
        WorkspaceCache workspace = new WorkspaceCache(ctx.vertx(), new WorkspaceStore(pool), WORKSPACE_TENANTS,
                WORKSPACE_FILES);
        ClawfleetConfig.Sandbox sandbox = config.sandbox();
        SandboxClient sandboxes = new SandboxClient(ctx.vertx(), ctx.membership(), ctx.metrics(), ctx.signer(), sandbox.circuitFailures(),
                sandbox.circuitCooldownMs(), SANDBOX_REPLY_MARGIN_MS, System::currentTimeMillis);
        SandboxTools sandboxTools = new SandboxTools(sandboxes, workspace, ctx.vertx().eventBus(), config);
        // Tenants' secrets are opened here: a worker without the master key they need does not start (verify, below).
        TenantKeys tenantKeys = new TenantKeys(pool, config.security().masterKeys());
        EgressGuard egress = EgressGuard.system(ctx.vertx(), config.security().egressAllowedHosts());
        RemoteMcpTools remoteMcp = new RemoteMcpTools(ctx.vertx(), egress, RemoteMcpTools.ApiServers.of(new BotMcpServerStore(pool, tenantKeys)),
                config.agent().toolTimeoutMs(), sandbox.circuitFailures(), sandbox.circuitCooldownMs(), System::currentTimeMillis,
                ctx.metrics());
        McpTools mcp = new McpTools(sandboxes, remoteMcp, sandbox, System::currentTimeMillis);
        List<Tool> builtin = builtinTools(ctx, workspace, mcp);
        builtin.addAll(sandboxTools.tools());
        ToolCatalog catalog = new ToolCatalog(builtin,
                List.of(new CodeSkillTools(sandboxes, workspace, ctx.vertx().eventBus(), sandbox)), sandboxTools::offered);
        ToolTimeQuota toolTime = new ToolTimeQuota(ctx.vertx(), new UsageStore(pool), Clock.systemUTC());
        ToolRunner runner = new ToolRunner(new ToolPolicy(config.security().allowShell()), new AuditStore(pool), scrubber,
                config.agent().maxToolOutputChars(), config.agent().toolTimeoutMs(), ctx.metrics(), toolTime);
        // A bot's model calls go to its tenant's own providers when it has some, else to the cluster's (issue 14).
        BotModels botModels = new BotModels(ctx.vertx(), new BotProviderStore(pool, tenantKeys), router, config.llm().prices(),
                egress, config.llm().circuitFailures(),
                config.llm().circuitCooldownMs(), config.worker().turnTimeoutMs(), BOT_ROUTERS);
        AgentLoop.Model model = new TimedModel(botModels::complete, ctx.metrics());
        AgentLoop loop = new AgentLoop(ctx.vertx(), model, approvals(ctx, pool), runner,
                new TurnStepStore(pool), conversations, scrubber, config.agent().maxToolIterations(),
                config.worker().turnTimeoutMs(), config.worker().maxTurnStarts(), config.agent().approvalTtlSeconds(),
                ctx.metrics(), ctx.signer(), ctx.tracing());
        TenantSettings tenants = new TenantSettings(ctx.vertx(), new BotStore(pool),
                new TenantSettings.Settings(Autonomy.parse(config.agent().autonomy()), config.agent().memoryScope()));
        Compactor compactor = new Compactor(ctx.vertx(), model, new CompactionStore(pool), workspace, tenants,
                scrubber, config.agent(), config.worker().turnTimeoutMs(), ctx.metrics());
        TurnHandler turns = new AgentTurns(ctx.nodeId(), new ContextBuilder(workspace, config.worker().historyMessages()),
                catalog, loop, tenants, compactor, mcp::tools, new ChatStore(pool)::isAdmin);
        tenantSlots = new TurnSlots(ctx.vertx(), new TurnSlotStore(pool), ctx.nodeId(), ctx.metrics());
        dispatcher = new ConversationDispatcher(ctx.vertx(), ctx.nodeId(), new InboxStore(pool), conversations,
                turns, config.worker(), ctx.metrics(), tenantSlots, ctx.signer());
        ownership = new PartitionOwnership(ctx.vertx(), ctx.nodeId(), ctx.membership(), new LeaseStore(ctx.database().controlPool()),
                config.lease(), dispatcher, ctx.metrics(), ctx.signer().roles());
        dispatcher.attach(ownership);
        dispatcher.start();
        ctx.readiness().register("worker", running::get);
        // Tenants' provider keys are opened here: a worker without the master key they need does not start, and says
        // which key it lacks (nothing is decrypted with a wrong key), as a gateway does.
        return tenantKeys.verify().compose(v -> Future.all(List.of(tenants.start(), workspace.start(), botModels.start(), toolTime.start(),
                        tenantSlots.start(), remoteMcp.start())))
                .compose(v -> ownership.start())
                .onSuccess(v -> running.set(true));
    }

    /** The tools every bot has (seed 000 §7), in a fixed order so the prompt's bytes are stable. */
    private static List<Tool> builtinTools(NodeContext ctx, WorkspaceCache workspace, McpTools mcp) {
        ChatStore chats = new ChatStore(ctx.database().pool());
        var bus = ctx.vertx().eventBus();
        List<Tool> tools = new ArrayList<>();
        tools.addAll(new WorkspaceTools(workspace, bus).tools());
        tools.addAll(new MemoryTools(workspace, bus).tools());
        tools.addAll(new SkillTools(workspace, chats, mcp::describe).tools());
        tools.addAll(new MessageTools(chats, bus, ctx.signer()).tools());
        tools.addAll(new ChatTools(chats).tools());
        tools.addAll(new TaskTools(new TaskStore(ctx.database().pool()), chats, ctx.config().scheduler()).tools());
        return tools;
    }

    /** Secrets this node holds, redacted wherever they would appear in a prompt, a result or a log. */
    private static List<String> knownSecrets(ClawfleetConfig config) {
        List<String> secrets = new ArrayList<>();
        secrets.add(config.llm().apiKey());
        config.llm().providers().values().forEach(p -> secrets.add(p.apiKey()));
        secrets.add(config.security().adminBootstrapKey());
        secrets.add(config.security().operatorKey());
        secrets.add(config.security().metricsKey());
        secrets.add(config.apiKey());
        secrets.add(config.telegram().botToken());
        secrets.add(config.cluster().secret());
        secrets.addAll(config.security().masterKeys().encodedForms());
        secrets.removeIf(java.util.Objects::isNull);
        return secrets;
    }

    private static ModelRouter router(NodeContext ctx) {
        if (ctx.config().security().adminBootstrapKey() != null) {
            LOG.warn("CLAWFLEET_ADMIN_BOOTSTRAP_KEY is set but no longer used: a key typed into a chat is stored and sent to "
                    + "the model provider. Grant the first admin chat with 'clawfleet admin grant --chat <channel>:<chat id>'");
        }
        ClawfleetConfig.Llm llm = ctx.config().llm();
        if (!llm.configured()) {
            LOG.warn("no language model configured: every reply will say so. Set CLAWFLEET_LLM_BASE_URL, CLAWFLEET_LLM_API_KEY and CLAWFLEET_LLM_MODEL");
        }
        ModelRouter router = LlmProviders.router(ctx.vertx(), llm);
        for (String role : router.roles()) {
            LOG.info("model role [node: {}, role: {}, providers: {}]", ctx.nodeId(), role, String.join(", ", router.chain(role)));
        }
        return router;
    }

    @Override
    public Future<Void> stop() {
        running.set(false);
        if (ownership == null) {
            return Future.succeededFuture();
        }
        return ownership.stop().onComplete(r -> {
            dispatcher.stop();
            router.close().onFailure(e -> LOG.warn("model clients did not close cleanly: {}", e.toString()));
        }).eventually(() -> tenantSlots.stop().recover(e -> {
            LOG.warn("turn slots not given back, they return when their leases expire: {}", e.toString());
            return Future.succeededFuture();
        }));
    }

    /** The model router: {@code router().complete(role, request, sink)} for any model call of a turn. */
    public ModelRouter router() {
        return router;
    }

    /** The dispatcher, for tests and status. */
    public ConversationDispatcher dispatcher() {
        return dispatcher;
    }

    public PartitionOwnership ownership() {
        return ownership;
    }

    /** Admins' decisions from admin chats: recorded (with their audit row), then the asking chat's owner woken. */
    private static AgentLoop.Approvals approvals(NodeContext ctx, io.vertx.sqlclient.Pool pool) {
        ApprovalStore store = new ApprovalStore(pool);
        return new AgentLoop.Approvals() {
            @Override
            public Future<List<ApprovalStore.Waiting>> waiting(BotRef bot) {
                return store.waiting(bot, APPROVALS_LISTED + 1);
            }

            @Override
            public Future<ApprovalStore.Outcome> decide(BotRef bot, String approvalId, ApprovalStore.Decision decision,
                                                        String decidedBy, long deciderChat) {
                return store.decide(bot, approvalId, decision, null, decidedBy, deciderChat).onSuccess(outcome -> {
                    if (outcome instanceof ApprovalStore.Outcome.Decided decided && decided.message() != null) {
                        ctx.vertx().eventBus().publish(Addresses.partitionWake(decided.message().partition()),
                                new WakeUp(decided.message()));
                    }
                });
            }
        };
    }
}
