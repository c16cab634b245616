package io.clawfleet.worker.turn;

import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.HistoryEntry;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class ChatLaneTest {

    private static final BotRef BOT = BotRef.main("t");

    private static InboundMessage message(long seq) {
        return new InboundMessage(100 + seq, "t", "api", "c", 7, 1, seq, "u", "m" + seq, "user", Instant.EPOCH, null);
    }

    private static ChatLane loadedLane(long doneSeq) {
        ChatLane lane = new ChatLane(7, 1, BOT, 10, new QueueBudget(1_000));
        lane.offer(message(doneSeq + 1));
        assertThat(lane.next()).isEqualTo(ChatLane.Step.LOAD);
        lane.begin();
        lane.loaded(doneSeq, null, List.of());
        return lane;
    }

    @Test
    void anUnknownChatIsLoadedBeforeItsFirstTurn() {
        ChatLane lane = new ChatLane(7, 1, BOT, 10, new QueueBudget(1_000));
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
    void onlyTheFirstMessageAnOwnerRunsInAChatMayHaveBeenStartedByAnEarlierOwner() {
        // given a chat with 1, 2 and 3 waiting when this worker claimed the partition
        ChatLane lane = loadedLane(0);
        lane.offer(message(2));
        lane.offer(message(3));
        // then 1 may have been started by the earlier owner
        assertThat(lane.mayHaveStartedElsewhere(true)).isTrue();
        lane.begin();
        // and when its answer was found done elsewhere (the earlier owner committed it), 2 may have been started too
        lane.doneElsewhere(1);
        assertThat(lane.mayHaveStartedElsewhere(true)).isTrue();
        // but once this owner committed 2, nothing after it was started before: 2 was pending at the claim
        lane.begin();
        lane.done(2, HistoryEntry.assistant("a2"));
        assertThat(lane.mayHaveStartedElsewhere(true)).isFalse();
        // and a message committed after the claim never was
        assertThat(loadedLane(0).mayHaveStartedElsewhere(false)).isFalse();
    }

    @Test
    void aLaneOfATenureClaimedStraightBackKnowsWhatItsWorkerStartedAndCommitted() {
        // given a lane that committed 1 and started 2 when its worker lost the partition
        ChatLane lane = loadedLane(0);
        lane.begin();
        lane.done(1, HistoryEntry.assistant("a1"));
        lane.offer(message(2));
        lane.starting(message(2).id());
        ChatLane.Carried carried = lane.carried();
        // when the worker claims it back with no owner between and a new lane takes that over
        ChatLane next = new ChatLane(7, 1, BOT, 10, new QueueBudget(1_000));
        next.carry(carried);
        // then 2 is a retry of its own turn, and nothing of the chat was started by another owner
        assertThat(next.startedBefore(message(2).id())).isTrue();
        assertThat(next.mayHaveStartedElsewhere(true)).isFalse();
        // and a lane that neither started nor committed anything has nothing to carry
        assertThat(new ChatLane(8, 1, BOT, 10, new QueueBudget(1_000)).carried()).isNull();
    }

    @Test
    void aWakeUpThatOvertookAnEarlierOneTriggersAReadInsteadOfARun() {
        // given seq 1 done and a wake-up for 3 arriving before the one for 2
        ChatLane lane = new ChatLane(7, 1, BOT, 10, new QueueBudget(1_000));
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
        ChatLane lane = new ChatLane(7, 1, BOT, 10, new QueueBudget(1_000));
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
        ChatLane lane = new ChatLane(7, 1, BOT, 10, new QueueBudget(1_000));
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
        ChatLane lane = new ChatLane(7, 1, BOT, 2, new QueueBudget(1_000));
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
        // given a budget of 2 taken by chats of two tenants
        QueueBudget budget = new QueueBudget(2);
        ChatLane a = new ChatLane(1, 1, BotRef.main("x"), 10, budget);
        ChatLane b = new ChatLane(2, 1, BotRef.main("y"), 10, budget);
        a.offer(message(1));
        b.offer(message(1));
        // when a third chat's message arrives beyond the budget / then it waits in the inbox
        ChatLane c = new ChatLane(3, 1, BotRef.main("z"), 10, budget);
        c.offer(message(1));
        assertThat(c.queued()).isZero();
        assertThat(c.next()).isEqualTo(ChatLane.Step.LOAD);
        c.begin();
        c.loaded(0, null, List.of());
        assertThat(c.next()).isEqualTo(ChatLane.Step.IDLE);
        // and memory is given back as messages are done, so it can be fetched then
        a.begin();
        a.loaded(0, null, List.of());
        a.begin();
        a.done(1);
        assertThat(budget.used()).isEqualTo(1);
        assertThat(c.next()).isEqualTo(ChatLane.Step.FETCH);
        c.begin();
        c.fetched(List.of(message(1)), 1, 10);
        assertThat(c.next()).isEqualTo(ChatLane.Step.RUN);
        b.discard();
        assertThat(budget.used()).isEqualTo(1);
    }

    @Test
    void aFloodingTenantCannotKeepAnotherTenantsMessagesOutOfMemory() {
        // given a budget of 10 and tenant A offering 20 messages to one chat
        QueueBudget budget = new QueueBudget(10);
        ChatLane flood = new ChatLane(1, 1, BotRef.main("a"), 100, budget);
        for (long seq = 1; seq <= 20; seq++) {
            flood.offer(message(seq));
        }
        // then A holds only half (as much as it leaves free), and tenant B's message still gets in
        assertThat(flood.queued()).isEqualTo(5);
        ChatLane quiet = new ChatLane(2, 1, BotRef.main("b"), 100, budget);
        quiet.offer(message(1));
        assertThat(quiet.queued()).isEqualTo(1);
        // and A's messages left in the inbox come back in order once its turns free room
        flood.begin();
        flood.loaded(0, null, List.of());
        for (long seq = 1; seq <= 5; seq++) {
            assertThat(flood.next()).isEqualTo(ChatLane.Step.RUN);
            assertThat(flood.head().seq()).isEqualTo(seq);
            flood.begin();
            flood.done(seq);
        }
        assertThat(flood.next()).isEqualTo(ChatLane.Step.FETCH);
        long offeredBefore = flood.highestOffered();
        flood.begin();
        flood.fetched(java.util.stream.LongStream.rangeClosed(6, 20).mapToObj(ChatLaneTest::message).toList(), offeredBefore, 100);
        assertThat(flood.queued()).isEqualTo(5);
        assertThat(flood.next()).isEqualTo(ChatLane.Step.RUN);
        assertThat(flood.head().seq()).isEqualTo(6);
    }

    @Test
    void aTenantOverItsPartWaitsInsteadOfReadingTheInboxInALoop() {
        // given tenant A holding as much as the budget has free, and a message of A's left in the inbox
        QueueBudget budget = new QueueBudget(4);
        ChatLane held = new ChatLane(1, 1, BotRef.main("a"), 100, budget);
        held.offer(message(1));
        held.offer(message(2));
        ChatLane waiting = new ChatLane(2, 1, BotRef.main("a"), 100, budget);
        waiting.offer(message(1));
        waiting.begin();
        waiting.loaded(0, null, List.of());
        // then, though the worker has room, a read could hold nothing for A: the lane waits (the sweep comes back to it)
        assertThat(waiting.queued()).isZero();
        assertThat(waiting.next()).isEqualTo(ChatLane.Step.IDLE);
        // until A's other chat gives memory back
        held.discard();
        assertThat(waiting.next()).isEqualTo(ChatLane.Step.FETCH);
    }

    @Test
    void heldMessagesWaitingForOneNotInMemoryGiveTheirPlacesToIt() {
        // given tenant A's lane holding 2..6 (the wake-up of 1 was lost), which is as much as A may hold
        QueueBudget budget = new QueueBudget(10);
        ChatLane lane = new ChatLane(1, 1, BotRef.main("a"), 100, budget);
        for (long seq = 2; seq <= 6; seq++) {
            lane.offer(message(seq));
        }
        lane.begin();
        lane.loaded(0, null, List.of());
        assertThat(budget.hasRoom("a")).isFalse();
        // when / then it still reads the inbox (waiting for room would wait for ever: only its own turns free it)
        assertThat(lane.next()).isEqualTo(ChatLane.Step.FETCH);
        long offeredBefore = lane.highestOffered();
        lane.begin();
        lane.fetched(java.util.stream.LongStream.rangeClosed(1, 6).mapToObj(ChatLaneTest::message).toList(), offeredBefore, 100);
        // and 1 runs first, with what fits behind it; the rest is read again after
        assertThat(lane.next()).isEqualTo(ChatLane.Step.RUN);
        assertThat(lane.head().seq()).isEqualTo(1);
        assertThat(lane.queued()).isEqualTo(5);
        for (long seq = 1; seq <= 5; seq++) {
            assertThat(lane.next()).isEqualTo(ChatLane.Step.RUN);
            assertThat(lane.head().seq()).isEqualTo(seq);
            lane.begin();
            lane.done(seq);
        }
        assertThat(lane.next()).isEqualTo(ChatLane.Step.FETCH);
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
