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
import io.clawfleet.worker.turn.ContextBuilder;
import io.clawfleet.worker.turn.ConversationDispatcher;
import io.clawfleet.worker.turn.TurnExecutor;
import io.vertx.core.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.atomic.AtomicBoolean;

/** Wiring of the worker role: model router, turn executor, dispatcher, partition ownership. */
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
        TurnExecutor executor = new TurnExecutor(ctx.vertx(), router.provider(ModelRouter.DEFAULT_ROLE), new ConversationStore(pool),
                new ContextBuilder(config.worker().historyMessages()), config.worker().turnTimeoutMs(), ctx.metrics());
        dispatcher = new ConversationDispatcher(ctx.vertx(), ctx.nodeId(), new InboxStore(pool), new ConversationStore(pool),
                executor, config.worker(), ctx.metrics());
        ownership = new PartitionOwnership(ctx.vertx(), ctx.nodeId(), ctx.membership(), new LeaseStore(pool),
                config.lease(), dispatcher, ctx.metrics());
        dispatcher.attach(ownership);
        dispatcher.start();
        ctx.readiness().register("worker", running::get);
        return ownership.start().onSuccess(v -> running.set(true));
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
