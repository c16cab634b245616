package io.clawfleet.worker.turn;

import io.clawfleet.shared.message.TurnRequest;
import io.vertx.core.Future;

/** Runs one turn of a chat, given its lane (history and settings as last loaded). */
@FunctionalInterface
public interface TurnHandler {

    /** Never fails: every ending is a {@link TurnOutcome}. */
    Future<TurnOutcome> run(TurnRequest turn, ChatLane lane);

    /**
     * Upkeep after a committed turn, such as compacting a long chat. Runs beside the chat's next
     * turns, never two at once for one chat.
     *
     * @param turn the turn just committed (its partition and epoch fence the upkeep's writes)
     * @return true when the chat's stored state changed and the lane must read it again
     */
    default Future<Boolean> maintain(TurnRequest turn, ChatLane lane) {
        return Future.succeededFuture(false);
    }
}
