package io.clawfleet.worker.turn;

import io.clawfleet.shared.message.TurnRequest;
import io.clawfleet.worker.tools.Autonomy;
import io.vertx.core.Future;

import java.util.Objects;

/** The agent's turns: the context built for the chat, then the agent loop. */
public final class AgentTurns implements TurnHandler {

    private final String nodeId;
    private final ContextBuilder context;
    private final AgentLoop loop;
    private final Autonomy autonomy;

    public AgentTurns(String nodeId, ContextBuilder context, AgentLoop loop, Autonomy autonomy) {
        this.nodeId = Objects.requireNonNull(nodeId);
        this.context = Objects.requireNonNull(context);
        this.loop = Objects.requireNonNull(loop);
        this.autonomy = Objects.requireNonNull(autonomy);
    }

    @Override
    public Future<TurnOutcome> run(TurnRequest turn, ChatLane lane) {
        return context.build(turn.message(), lane.state(), lane.history(), lane.summary())
                .compose(prompt -> loop.run(new AgentLoop.Turn(turn, nodeId, prompt, lane.state(), autonomy, null)))
                .recover(failure -> Future.succeededFuture(new TurnOutcome.Failed(failure)));
    }
}
