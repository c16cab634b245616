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
import io.clawfleet.shared.security.SecretScrubber;
import io.clawfleet.shared.store.AuditStore;
import io.clawfleet.shared.store.ChatStore;
import io.clawfleet.shared.store.TaskStore;
import io.clawfleet.shared.store.TenantStore;
import io.clawfleet.shared.store.TurnStepStore;
import io.clawfleet.worker.tools.Autonomy;
import io.clawfleet.worker.tools.Tool;
import io.clawfleet.worker.tools.ToolPolicy;
import io.clawfleet.worker.tools.ToolRegistry;
import io.clawfleet.worker.tools.ToolRunner;
import io.clawfleet.worker.tools.builtin.ChatTools;
import io.clawfleet.worker.tools.builtin.MessageTools;
import io.clawfleet.worker.tools.builtin.TaskTools;
import io.clawfleet.worker.turn.AgentLoop;
import io.clawfleet.worker.turn.AgentTurns;
import io.clawfleet.worker.turn.ContextBuilder;
import io.clawfleet.worker.turn.ConversationDispatcher;
import io.clawfleet.worker.turn.TenantSettings;
import io.clawfleet.worker.turn.TurnHandler;
import io.vertx.core.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/** Wiring of the worker role: model router, tools, agent loop, dispatcher, partition ownership. */
public final class WorkerRole implements NodeRole {

    private static final Logger LOG = LoggerFactory.getLogger(WorkerRole.class);

    private final AtomicBoolean running = new AtomicBoolean();
    private ModelRouter router;
    private PartitionOwnership ownership;
    private ConversationDispatcher dispatcher;

    @Override
    public String name() {
        return "worker";
    }

    @Override
    public Future<Void> start(NodeContext ctx) {
        ClawfleetConfig config = ctx.config();
        router = router(ctx);
        var pool = ctx.database().pool();
        ConversationStore conversations = new ConversationStore(pool);
        SecretScrubber scrubber = new SecretScrubber(knownSecrets(config));
        ChatStore chats = new ChatStore(pool);
        List<Tool> tools = new ArrayList<>();
        tools.addAll(new ChatTools(chats, config.security().adminBootstrapKey()).tools());
        tools.addAll(new MessageTools(chats, ctx.vertx().eventBus()).tools());
        tools.addAll(new TaskTools(new TaskStore(pool), chats, config.scheduler()).tools());
        ToolRunner runner = new ToolRunner(new ToolRegistry(tools),
                new ToolPolicy(path -> false, config.security().allowShell()),
                new AuditStore(pool), scrubber, config.agent().maxToolOutputChars(), config.agent().toolTimeoutMs(),
                ctx.metrics());
        AgentLoop loop = new AgentLoop(ctx.vertx(), (role, request) -> router.complete(role, request, null), runner,
                new TurnStepStore(pool), conversations, scrubber, config.agent().maxToolIterations(),
                config.worker().turnTimeoutMs(), ctx.metrics());
        TenantSettings tenants = new TenantSettings(ctx.vertx(), new TenantStore(pool), Autonomy.parse(config.agent().autonomy()));
        TurnHandler turns = new AgentTurns(ctx.nodeId(), new ContextBuilder(config.worker().historyMessages()), loop, tenants);
        dispatcher = new ConversationDispatcher(ctx.vertx(), ctx.nodeId(), new InboxStore(pool), conversations,
                turns, config.worker(), ctx.metrics());
        ownership = new PartitionOwnership(ctx.vertx(), ctx.nodeId(), ctx.membership(), new LeaseStore(pool),
                config.lease(), dispatcher, ctx.metrics());
        dispatcher.attach(ownership);
        dispatcher.start();
        ctx.readiness().register("worker", running::get);
        return tenants.start().compose(v -> ownership.start()).onSuccess(v -> running.set(true));
    }

    /** Secrets this node holds, redacted wherever they would appear in a prompt, a result or a log. */
    private static List<String> knownSecrets(ClawfleetConfig config) {
        List<String> secrets = new ArrayList<>();
        secrets.add(config.llm().apiKey());
        config.llm().providers().values().forEach(p -> secrets.add(p.apiKey()));
        secrets.add(config.security().adminBootstrapKey());
        secrets.add(config.apiKey());
        secrets.add(config.telegram().botToken());
        secrets.removeIf(java.util.Objects::isNull);
        return secrets;
    }

    private static ModelRouter router(NodeContext ctx) {
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
        });
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
}
