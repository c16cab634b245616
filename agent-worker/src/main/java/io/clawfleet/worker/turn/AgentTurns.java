package io.clawfleet.worker.turn;

import io.clawfleet.shared.message.TurnRequest;
import io.vertx.core.Future;

import java.util.Objects;

/** The agent's turns: the context built for the chat, then the agent loop. */
public final class AgentTurns implements TurnHandler {

    private final String nodeId;
    private final ContextBuilder context;
    private final AgentLoop loop;
    private final TenantSettings tenants;

    public AgentTurns(String nodeId, ContextBuilder context, AgentLoop loop, TenantSettings tenants) {
        this.nodeId = Objects.requireNonNull(nodeId);
        this.context = Objects.requireNonNull(context);
        this.loop = Objects.requireNonNull(loop);
        this.tenants = Objects.requireNonNull(tenants);
    }

    @Override
    public Future<TurnOutcome> run(TurnRequest turn, ChatLane lane) {
        return Future.all(context.build(turn.message(), lane.state(), lane.history(), lane.summary()),
                        tenants.autonomy(turn.message().tenantId()))
                .compose(both -> loop.run(new AgentLoop.Turn(turn, nodeId, both.resultAt(0), lane.state(),
                        both.resultAt(1), turn.message().modelRole())))
                .recover(failure -> Future.succeededFuture(new TurnOutcome.Failed(failure)));
    }
}
