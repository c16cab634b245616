package io.clawfleet.worker.turn;

import io.clawfleet.shared.message.TurnRequest;
import io.clawfleet.shared.store.ConversationStore.ChatState;
import io.clawfleet.shared.store.Fence;
import io.clawfleet.worker.tools.ToolCatalog;
import io.vertx.core.Future;

import java.util.Objects;

/** The agent's turns: the context built for the chat and the tools it offers, then the agent loop. */
public final class AgentTurns implements TurnHandler {

    private final String nodeId;
    private final ContextBuilder context;
    private final ToolCatalog tools;
    private final AgentLoop loop;
    private final TenantSettings tenants;
    private final Compactor compactor;

    public AgentTurns(String nodeId, ContextBuilder context, ToolCatalog tools, AgentLoop loop, TenantSettings tenants,
                      Compactor compactor) {
        this.nodeId = Objects.requireNonNull(nodeId);
        this.context = Objects.requireNonNull(context);
        this.tools = Objects.requireNonNull(tools);
        this.loop = Objects.requireNonNull(loop);
        this.tenants = Objects.requireNonNull(tenants);
        this.compactor = Objects.requireNonNull(compactor);
    }

    @Override
    public Future<TurnOutcome> run(TurnRequest turn, ChatLane lane) {
        ChatState chat = lane.state();
        return Future.all(context.build(turn, chat.disabledSkills(), chat.admin(), lane.history(), lane.summary()),
                        tenants.autonomy(turn.message().tenantId()))
                .compose(both -> {
                    ContextBuilder.Context built = both.resultAt(0);
                    return loop.run(new AgentLoop.Turn(turn, nodeId, built.messages(),
                            tools.forTurn(built.workspace(), chat.disabledSkills()), chat, both.resultAt(1),
                            turn.message().modelRole()));
                })
                .recover(failure -> Future.succeededFuture(new TurnOutcome.Failed(failure)));
    }

    /** Compacts a chat grown past the threshold; whatever it found, the lane reads the chat again after. */
    @Override
    public Future<Boolean> maintain(TurnRequest turn, ChatLane lane) {
        if (!compactor.due(lane.unconsolidated()) || lane.state() == null) {
            return Future.succeededFuture(false);
        }
        Fence fence = new Fence(turn.partition(), nodeId, turn.epoch());
        return compactor.compact(fence, turn.message(), lane.state().consolidatedThrough(), lane.summary()).map(true);
    }
}
