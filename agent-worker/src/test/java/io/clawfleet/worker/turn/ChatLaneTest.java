package io.clawfleet.worker.turn;

import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.store.HistoryEntry;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class ChatLaneTest {

    private static InboundMessage message(long seq) {
        return new InboundMessage(100 + seq, "t", "api", "c", 7, 1, seq, "u", "m" + seq, "user", Instant.EPOCH, null);
    }

    private static ChatLane loadedLane(long doneSeq) {
        ChatLane lane = new ChatLane(7, 1, 10, new QueueBudget(1_000));
        lane.offer(message(doneSeq + 1));
        assertThat(lane.next()).isEqualTo(ChatLane.Step.LOAD);
        lane.begin();
        lane.loaded(doneSeq, null, List.of());
        return lane;
    }

    @Test
    void anUnknownChatIsLoadedBeforeItsFirstTurn() {
        ChatLane lane = new ChatLane(7, 1, 10, new QueueBudget(1_000));
        assertThat(lane.next()).isEqualTo(ChatLane.Step.IDLE);
        lane.offer(message(1));
        assertThat(lane.next()).isEqualTo(ChatLane.Step.LOAD);
    }

    @Test
    void consecutiveMessagesRunInOrderOneAtATime() {
        // given a loaded chat with 1 and 2 pending
        ChatLane lane = loadedLane(0);
        lane.offer(message(2));
        // when 1 runs, 2 must wait
        assertThat(lane.next()).isEqualTo(ChatLane.Step.RUN);
        assertThat(lane.head().seq()).isEqualTo(1);
        lane.begin();
        assertThat(lane.next()).isEqualTo(ChatLane.Step.BUSY);
        lane.done(1, HistoryEntry.assistant("a1"));
        // then 2 runs next
        assertThat(lane.next()).isEqualTo(ChatLane.Step.RUN);
        assertThat(lane.head().seq()).isEqualTo(2);
    }

    @Test
    void aWakeUpThatOvertookAnEarlierOneTriggersAReadInsteadOfARun() {
        // given seq 1 done and a wake-up for 3 arriving before the one for 2
        ChatLane lane = new ChatLane(7, 1, 10, new QueueBudget(1_000));
        lane.offer(message(3));
        lane.begin();
        lane.loaded(1, null, List.of());
        // when deciding / then it must not run 3 before knowing about 2
        assertThat(lane.next()).isEqualTo(ChatLane.Step.FETCH);
        long offeredBefore = lane.highestOffered();
        lane.begin();
        lane.fetched(List.of(message(2), message(3)), offeredBefore, 10);
        assertThat(lane.next()).isEqualTo(ChatLane.Step.RUN);
        assertThat(lane.head().seq()).isEqualTo(2);
    }

    @Test
    void aReadThatFindsNothingBeforeProvesAGapAndLetsTheMessageRun() {
        // given done through 1 and only 3 pending (2 was a duplicate that never became a message)
        ChatLane lane = new ChatLane(7, 1, 10, new QueueBudget(1_000));
        lane.offer(message(3));
        lane.begin();
        lane.loaded(1, null, List.of());
        assertThat(lane.next()).isEqualTo(ChatLane.Step.FETCH);
        lane.begin();
        lane.fetched(List.of(message(3)), 3, 10);
        assertThat(lane.next()).isEqualTo(ChatLane.Step.RUN);
        assertThat(lane.head().seq()).isEqualTo(3);
    }

    @Test
    void messagesAnsweredElsewhereAreDroppedByARead() {
        ChatLane lane = new ChatLane(7, 1, 10, new QueueBudget(1_000));
        lane.offer(message(3));
        lane.offer(message(4));
        lane.begin();
        lane.loaded(1, null, List.of());
        lane.begin();
        // the read shows 3 is no longer pending (an earlier owner answered it)
        lane.fetched(List.of(message(4)), 4, 10);
        assertThat(lane.next()).isEqualTo(ChatLane.Step.RUN);
        assertThat(lane.head().seq()).isEqualTo(4);
        assertThat(lane.queued()).isEqualTo(1);
    }

    @Test
    void beyondTheCapMessagesWaitInTheInboxAndComeBackInOrder() {
        // given a cap of 2 and 4 messages offered
        ChatLane lane = new ChatLane(7, 1, 2, new QueueBudget(1_000));
        for (long seq = 1; seq <= 4; seq++) {
            lane.offer(message(seq));
        }
        assertThat(lane.queued()).isEqualTo(2);
        lane.begin();
        lane.loaded(0, null, List.of());
        // when 1 and 2 are done
        for (long seq = 1; seq <= 2; seq++) {
            assertThat(lane.next()).isEqualTo(ChatLane.Step.RUN);
            lane.begin();
            lane.done(seq);
        }
        // then the lane reads the rest from the inbox, in order
        assertThat(lane.next()).isEqualTo(ChatLane.Step.FETCH);
        lane.begin();
        lane.fetched(List.of(message(3), message(4)), 4, 2);
        assertThat(lane.next()).isEqualTo(ChatLane.Step.RUN);
        assertThat(lane.head().seq()).isEqualTo(3);
    }

    @Test
    void theWorkerWideBudgetBoundsMemoryAndIsGivenBack() {
        // given a budget of 2 shared by two chats
        QueueBudget budget = new QueueBudget(2);
        ChatLane a = new ChatLane(1, 1, 10, budget);
        ChatLane b = new ChatLane(2, 1, 10, budget);
        a.offer(message(1));
        a.offer(message(2));
        // when another chat's message arrives beyond the budget / then it waits in the inbox
        b.offer(message(1));
        assertThat(b.queued()).isZero();
        assertThat(b.next()).isEqualTo(ChatLane.Step.LOAD);
        // and memory is given back as messages are done, so it can be fetched then
        a.begin();
        a.loaded(0, null, List.of());
        a.begin();
        a.done(1);
        assertThat(budget.used()).isEqualTo(1);
        b.begin();
        b.loaded(0, null, List.of());
        assertThat(b.next()).isEqualTo(ChatLane.Step.FETCH);
        b.begin();
        b.fetched(List.of(message(1)), 1, 10);
        assertThat(b.next()).isEqualTo(ChatLane.Step.RUN);
        a.discard();
        assertThat(budget.used()).isEqualTo(1);
    }

    @Test
    void duplicatesAndDoneMessagesAreIgnored() {
        ChatLane lane = loadedLane(0);
        lane.offer(message(1));
        assertThat(lane.queued()).isEqualTo(1);
        lane.begin();
        lane.done(1);
        lane.offer(message(1));
        assertThat(lane.next()).isEqualTo(ChatLane.Step.IDLE);
    }

    @Test
    void answeredElsewhereForcesAReloadOfHistory() {
        ChatLane lane = loadedLane(0);
        lane.offer(message(2));
        lane.begin();
        lane.doneElsewhere(1);
        assertThat(lane.next()).isEqualTo(ChatLane.Step.LOAD);
    }

    @Test
    void historyIsKeptToItsBound() {
        ChatLane lane = loadedLane(0);
        lane.begin();
        lane.done(1, HistoryEntry.user("u", "q"), HistoryEntry.assistant("a"));
        lane.trimHistory(1);
        assertThat(lane.history()).extracting(HistoryEntry::content).containsExactly("a");
    }
}
