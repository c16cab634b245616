package io.clawfleet.worker.turn;

import io.clawfleet.shared.message.TurnRequest;
import io.vertx.core.Future;

/** Runs one turn of a chat, given its lane (history and settings as last loaded). */
@FunctionalInterface
public interface TurnHandler {

    /** Never fails: every ending is a {@link TurnOutcome}. */
    Future<TurnOutcome> run(TurnRequest turn, ChatLane lane);
}
