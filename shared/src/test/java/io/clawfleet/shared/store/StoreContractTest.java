package io.clawfleet.shared.store;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.OutboundReply;
import io.clawfleet.shared.partition.Partitioner;
import io.clawfleet.shared.store.ConversationStore.CommitResult;
import io.clawfleet.shared.testing.Await;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import static io.clawfleet.shared.testing.Await.failure;
import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The storage rules the cluster's guarantees rest on: idempotent intake, per-chat order, lease
 * epochs, and the fenced turn commit. Runs on embedded PostgreSQL, and on a container when Docker is there.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class StoreContractTest {

    private static final int PARTITIONS = 16;

    private Vertx vertx;
    private Database database;
    private InboxStore inbox;
    private LeaseStore leases;
    private ConversationStore conversations;
    private OutboxStore outbox;
    private final Partitioner partitioner = new Partitioner(PARTITIONS);

    /** A fresh, migrated database with {@value PARTITIONS} partitions. */
    abstract DbUrl database(int partitions);

    @BeforeAll
    void startDatabase() {
        vertx = Vertx.vertx();
        database = Database.connect(vertx, database(PARTITIONS), 4, 5_000);
        inbox = new InboxStore(database.pool());
        leases = new LeaseStore(database.pool());
        conversations = new ConversationStore(database.pool());
        outbox = new OutboxStore(database.pool());
        result(new TenantStore(database.pool()).ensure("acme", "Acme", "acme-key-0123456789abcdef"));
    }

    @AfterAll
    void stop() {
        result(database.close());
        result(vertx.close());
    }

    private InboundMessage accept(String chat, String messageId, String text) {
        return result(inbox.accept("acme", "api", chat, partitioner.partitionOf("acme", "api", chat), messageId,
                "alice", "user", text, null)).message();
    }

    private static String chat() {
        return "chat-" + UUID.randomUUID();
    }

    /** A new chat whose partition is none of {@code used} (then added to it). */
    private String chatOfAnotherPartition(Set<Integer> used) {
        while (true) {
            String chat = chat();
            if (used.add(partitioner.partitionOf("acme", "api", chat))) {
                return chat;
            }
        }
    }

    @Test
    void sameMessageIdIsAcceptedOnce() {
        // given a message accepted once / when the client retries with the same id / then the same row comes back
        String chat = chat();
        var first = result(inbox.accept("acme", "api", chat, 1, "m-1", "alice", "user", "hi", null));
        var again = result(inbox.accept("acme", "api", chat, 1, "m-1", "alice", "user", "hi", null));
        assertThat(first.created()).isTrue();
        assertThat(again.created()).isFalse();
        assertThat(again.message().id()).isEqualTo(first.message().id());
        assertThat(again.message().seq()).isEqualTo(first.message().seq());
        assertThat(result(inbox.pendingInChat(first.message().chatId(), 0, 10))).hasSize(1);
    }

    @Test
    void aChatsMessagesGetConsecutiveSeqsAndDuplicatesLeaveNoGap() {
        String chat = chat();
        InboundMessage m1 = accept(chat, "a", "one");
        accept(chat, "a", "one again");
        InboundMessage m2 = accept(chat, "b", "two");
        InboundMessage m3 = accept(chat, "c", "three");
        assertThat(List.of(m1.seq(), m2.seq(), m3.seq())).containsExactly(1L, 2L, 3L);
        assertThat(result(inbox.pendingInChat(m1.chatId(), 1, 10))).extracting(InboundMessage::text).containsExactly("two", "three");
    }

    @Test
    void aChatWithTooManyUnansweredMessagesIsRefusedAndNothingChanges() {
        // given a chat with 2 unanswered messages and a limit of 2
        String chat = chat();
        int p = partitioner.partitionOf("acme", "api", chat);
        result(inbox.accept("acme", "api", chat, p, "1", "alice", "user", "one", null, 2, null));
        InboundMessage second = result(inbox.accept("acme", "api", chat, p, "2", "alice", "user", "two", null, 2, null)).message();
        // when a third arrives / then it is refused, and nothing is stored or numbered
        var third = result(inbox.accept("acme", "api", chat, p, "3", "alice", "user", "three", null, 2, null));
        assertThat(third.outcome()).isEqualTo(InboxStore.Outcome.BACKLOG_FULL);
        assertThat(result(inbox.pendingInChat(second.chatId(), 0, 10))).hasSize(2);
        // a retry of an accepted message is still answered as a duplicate
        assertThat(result(inbox.accept("acme", "api", chat, p, "2", "alice", "user", "two", null, 2, null)).outcome())
                .isEqualTo(InboxStore.Outcome.DUPLICATE);
        // and once one is answered there is room again, numbered next
        Fence fence = new Fence(p, "wb", takeOver(p, "wb"));
        InboundMessage first = result(inbox.pendingInChat(second.chatId(), 0, 10)).get(0);
        result(conversations.commitTurn(fence, first, List.of(), "re one", null));
        InboundMessage again = result(inbox.accept("acme", "api", chat, p, "3", "alice", "user", "three", null, 2, null)).message();
        assertThat(again.seq()).isEqualTo(3);
    }

    @Test
    void aMessagesContextModeTravelsThroughTheInbox() {
        // given a scheduled firing accepted as isolated, and a user message without a mode
        String chat = chat();
        int p = partitioner.partitionOf("acme", "api", chat);
        InboundMessage firing = result(inbox.accept(new InboxStore.Intake("acme", "main", "api", chat, p, "task:t-1:1", "task:t-1",
                "task", "check the build", null, 0, null, "isolated"))).message();
        accept(chat, "m-1", "hello");
        // when the worker reads the chat's pending messages / then each carries its own mode
        List<InboundMessage> pending = result(inbox.pendingInChat(firing.chatId(), 0, 10));
        assertThat(firing.contextMode()).isEqualTo("isolated");
        assertThat(pending).extracting(InboundMessage::contextMode).containsExactly("isolated", null);
        assertThat(pending).extracting(InboundMessage::kind).containsExactly("task", "user");
    }

    @Test
    void whatEachIntakeAndReadSawOfTheChatsRoleTravelsWithTheMessage() {
        // given a normal chat and an admin chat
        String normal = chat();
        String admin = chat();
        accept(admin, "a-0", "first");
        result(new ChatStore(database.pool()).setRole(BotRef.main("acme"), "api", admin, "admin"));
        // when messages are accepted one by one and in a batch, retried, and read back
        InboundMessage one = accept(normal, "n-1", "one");
        InboundMessage two = accept(admin, "a-1", "two");
        List<InboxStore.Accepted> batch = result(inbox.acceptAll(List.of(intake(normal, "n-2", "three"),
                intake(admin, "a-2", "four")), 0));
        InboundMessage retried = accept(admin, "a-1", "two again");
        // then each says whether its chat was an admin chat then; a retry does not know (and the worker reads the role)
        assertThat(one.adminChat()).isFalse();
        assertThat(two.adminChat()).isTrue();
        assertThat(batch).extracting(a -> a.message().adminChat()).containsExactly(false, true);
        assertThat(retried.adminChat()).isNull();
        // and a read says what the chat's role is at the read
        result(new ChatStore(database.pool()).setRole(BotRef.main("acme"), "api", admin, "normal"));
        assertThat(result(inbox.pendingInChat(two.chatId(), 0, 10))).extracting(InboundMessage::adminChat)
                .containsOnly(false);
    }

    private InboxStore.Intake intake(String chat, String messageId, String text) {
        return new InboxStore.Intake("acme", "main", "api", chat, partitioner.partitionOf("acme", "api", chat), messageId, "alice",
                "user", text, null, 0, null, null);
    }

    @Test
    void aBatchAcceptsEachMessageAsOneByOneWould() {
        // given a chat that already has a message, and two new chats
        String known = chat();
        InboundMessage first = accept(known, "k-1", "one");
        String fresh1 = chat();
        String fresh2 = chat();
        // when a batch brings the known chat's next message, a retry of its first, and the new chats' first
        List<InboxStore.Accepted> batch = result(inbox.acceptAll(List.of(intake(fresh1, "a", "hello"),
                intake(known, "k-2", "two"), intake(fresh2, "b", "hi")), 0));
        List<InboxStore.Accepted> retry = result(inbox.acceptAll(List.of(intake(known, "k-1", "one again"),
                intake(fresh1, "a", "hello again")), 0));
        // then every message is stored once, numbered in its chat, and retries return the stored row
        assertThat(batch).allSatisfy(accepted -> assertThat(accepted.created()).isTrue());
        assertThat(batch).extracting(a -> a.message().seq()).containsExactly(1L, 2L, 1L);
        assertThat(batch).extracting(a -> a.message().text()).containsExactly("hello", "two", "hi");
        assertThat(retry).extracting(InboxStore.Accepted::outcome)
                .containsExactly(InboxStore.Outcome.DUPLICATE, InboxStore.Outcome.DUPLICATE);
        assertThat(retry.get(0).message().id()).isEqualTo(first.id());
        assertThat(retry.get(1).message().id()).isEqualTo(batch.get(0).message().id());
        assertThat(result(inbox.pendingInChat(first.chatId(), 0, 10))).extracting(InboundMessage::text)
                .containsExactly("one", "two");
    }

    @Test
    void aBatchLeavesAChatWithAFullBacklogUntouchedAndSaysSo() {
        // given a chat with 2 unanswered messages and a limit of 2
        String full = chat();
        int p = partitioner.partitionOf("acme", "api", full);
        result(inbox.accept("acme", "api", full, p, "1", "alice", "user", "one", null, 2, null));
        InboundMessage second = result(inbox.accept("acme", "api", full, p, "2", "alice", "user", "two", null, 2, null)).message();
        String other = chat();
        // when a batch with the limit brings a third for it and a first for another chat
        List<InboxStore.Accepted> batch = result(inbox.acceptAll(List.of(intake(full, "3", "three"),
                intake(other, "x", "hello")), 2));
        // then the full chat's message is left unsettled (null) with nothing stored or numbered; the other is stored
        assertThat(batch.get(0)).isNull();
        assertThat(batch.get(1).created()).isTrue();
        assertThat(result(inbox.pendingInChat(second.chatId(), 0, 10))).hasSize(2);
        InboundMessage later = result(inbox.accept("acme", "api", full, p, "4", "alice", "user", "four", null, 0, null)).message();
        assertThat(later.seq()).isEqualTo(3);
    }

    @Test
    void sameMessageIdInAnotherChatIsAnotherMessage() {
        InboundMessage a = accept(chat(), "same", "x");
        InboundMessage b = accept(chat(), "same", "y");
        assertThat(a.id()).isNotEqualTo(b.id());
    }

    @Test
    void claimIncrementsEpochAndHeldLeaseCannotBeClaimedAgain() {
        long before = epochOf(3);
        assertThat(takeOver(3, "w1")).isEqualTo(before + 1);
        assertThat(result(leases.claim("w2", Set.of(3), 60_000, Set.of()))).isEmpty();
    }

    @Test
    void expiredLeaseCanBeTakenByAnyone() {
        takeOver(4, "w1", 100);
        // the lease ends 100 ms after the claim by the database's clock: another worker gets it once it has
        Await.until("the expired lease to be claimable", Duration.ofSeconds(10),
                () -> result(leases.claim("w2", Set.of(4), 60_000, Set.of())).containsKey(4));
        assertThat(ownerOf(4)).isEqualTo("w2");
    }

    @Test
    void leaseOfADepartedNodeCanBeTakenAtOnce() {
        takeOver(5, "gone");
        assertThat(result(leases.claim("w2", Set.of(5), 60_000, Set.of("gone")))).containsKey(5);
    }

    @Test
    void renewalWithAStaleEpochLosesTheLease() {
        long epoch = takeOver(6, "w1");
        result(leases.claim("w2", Set.of(6), 60_000, Set.of("w1")));
        assertThat(result(leases.renew("w1", Map.of(6, epoch), 60_000))).isEmpty();
        long current = epochOf(6);
        assertThat(result(leases.renew("w2", Map.of(6, current), 60_000))).containsExactly(6);
    }

    @Test
    void releasedLeaseIsClaimableAtOnceWithAHigherEpoch() {
        long epoch = takeOver(7, "w1");
        assertThat(result(leases.release("w1", 7, epoch))).isTrue();
        assertThat(result(leases.claim("w2", Set.of(7), 60_000, Set.of()))).containsEntry(7, epoch + 1);
        assertThat(result(leases.release("w1", 7, epoch))).as("a stale release changes nothing").isFalse();
    }

    @Test
    void staleOwnerCannotCommitTurn() {
        // given w1 owned the chat's partition and w2 took it over
        String chat = chat();
        InboundMessage message = accept(chat, "m", "hello");
        int p = message.partition();
        long oldEpoch = takeOver(p, "w1");
        long newEpoch = result(leases.claim("w2", Set.of(p), 60_000, Set.of("w1"))).get(p);

        // when the old owner commits its turn
        Throwable refused = failure(conversations.commitTurn(new Fence(p, "w1", oldEpoch), message,
                List.of(HistoryEntry.user("alice", "hello"), HistoryEntry.assistant("stale answer")), "stale answer", null));

        // then it is refused, nothing is written, and the new owner's commit succeeds once
        assertThat(refused).isInstanceOf(PartitionLostException.class);
        assertThat(result(outbox.replyTo("acme", message.id()))).isEmpty();
        CommitResult fresh = result(conversations.commitTurn(new Fence(p, "w2", newEpoch), message,
                List.of(HistoryEntry.user("alice", "hello"), HistoryEntry.assistant("fresh answer")), "fresh answer", null));
        assertThat(fresh).isInstanceOf(CommitResult.Committed.class);
        assertThat(result(outbox.replyTo("acme", message.id()))).get().extracting(r -> r.text()).isEqualTo("fresh answer");
        assertThat(result(conversations.load(message.chatId(), 10)).history())
                .extracting(HistoryEntry::content).containsExactly("hello", "fresh answer");
    }

    @Test
    void aHistoryWindowNeverOpensWithToolResultsWhoseCallIsCutOff() {
        // given a turn with a tool call: the user's message, the call, two results, the answer
        String chat = chat();
        InboundMessage message = accept(chat, "m", "what time is it");
        long epoch = takeOver(message.partition(), "w1");
        result(conversations.commitTurn(new Fence(message.partition(), "w1", epoch), message, List.of(
                HistoryEntry.user("alice", "what time is it"),
                new HistoryEntry("assistant", null, null, "[{\"id\":\"c1\"},{\"id\":\"c2\"}]", null),
                new HistoryEntry("tool", null, "12:00", null, "c1"),
                new HistoryEntry("tool", null, "UTC", null, "c2"),
                HistoryEntry.assistant("noon")), "noon", null));

        // when a window of 3 would start at the first tool result (its call outside the window, or pruned)
        // then the results go with their call and the window opens at the answer
        assertThat(result(conversations.load(message.chatId(), 3)).history())
                .extracting(HistoryEntry::content).containsExactly("noon");
        assertThat(result(conversations.load(message.chatId(), 4)).history())
                .extracting(HistoryEntry::role).containsExactly("assistant", "tool", "tool", "assistant");
    }

    @Test
    void aGroupOfTurnsCommitsEachAsAloneFencedAndAnsweredOnesIncluded() {
        // given three chats: one answered normally, one whose partition another worker has taken
        // over since, one whose message another worker has already answered
        Set<Integer> used = new java.util.HashSet<>();
        InboundMessage plain = accept(chatOfAnotherPartition(used), "p", "plain");
        InboundMessage stale = accept(chatOfAnotherPartition(used), "s", "stale");
        InboundMessage answered = accept(chatOfAnotherPartition(used), "a", "answered");
        Fence plainFence = new Fence(plain.partition(), "wg", takeOver(plain.partition(), "wg"));
        long oldEpoch = takeOver(stale.partition(), "wg");
        Fence staleFence = new Fence(stale.partition(), "wg", oldEpoch);
        takeOver(stale.partition(), "other");
        Fence answeredFence = new Fence(answered.partition(), "wg", takeOver(answered.partition(), "wg"));
        result(conversations.commitTurn(answeredFence, answered, List.of(), "first answer", null));
        TurnCommit withUsage = new TurnCommit(plainFence, plain, List.of(HistoryEntry.user("alice", "plain"),
                HistoryEntry.assistant("re plain")), "re plain", null,
                List.of(new TurnCommit.Usage("p", "m", 10, 2), new TurnCommit.Usage("p", "m", 20, 3)), null, false, "fs_write");
        // when the three turns are committed in one group
        List<Future<CommitResult>> outcomes = result(conversations.commitAll(List.of(withUsage,
                new TurnCommit(staleFence, stale, List.of(HistoryEntry.assistant("late")), "late", null, List.of(), null,
                        false, null),
                new TurnCommit(answeredFence, answered, List.of(), "second answer", null, List.of(), null, false, null))));
        // then each gets what it would alone: committed, fenced off, already done
        CommitResult.Committed committed = (CommitResult.Committed) outcomes.get(0).result();
        assertThat(committed.reply().seq()).isEqualTo(1);
        assertThat(committed.reply().text()).isEqualTo("re plain");
        assertThat(outcomes.get(1).cause()).isInstanceOf(PartitionLostException.class);
        assertThat(outcomes.get(2).result()).isInstanceOf(CommitResult.AlreadyDone.class);
        // and only the first wrote: its history in order, its usage, its /always, its reply
        var state = result(conversations.load(plain.chatId(), 10));
        assertThat(state.history()).extracting(HistoryEntry::content).containsExactly("plain", "re plain");
        assertThat(state.doneSeq()).isEqualTo(1);
        assertThat(state.alwaysAllowed()).containsExactly("fs_write");
        assertThat(result(outbox.replyTo("acme", stale.id()))).isEmpty();
        assertThat(result(outbox.replyTo("acme", answered.id()))).get().extracting(r -> r.text()).isEqualTo("first answer");
        Long tokens = result(database.pool().preparedQuery("SELECT sum(input_tokens) AS n FROM llm_usage WHERE inbox_id = $1")
                .execute(io.vertx.sqlclient.Tuple.of(plain.id())).map(rows -> rows.iterator().next().getLong("n")));
        assertThat(tokens).isEqualTo(30L);
    }

    @Test
    void aGroupingStoreAnswersManyTurnsAtOnceEachOnceAndInOrder() {
        // given a store that groups commits, and 30 chats with 3 messages each
        ConversationStore grouped = ConversationStore.grouped(vertx, database.pool(), 16, 1);
        List<List<InboundMessage>> chats = new java.util.ArrayList<>();
        for (int c = 0; c < 30; c++) {
            String chat = chat();
            chats.add(List.of(accept(chat, "1", "one"), accept(chat, "2", "two"), accept(chat, "3", "three")));
        }
        java.util.Map<Integer, Long> epochs = new java.util.HashMap<>();
        // when each chat's messages are committed one after the other, all chats at once
        List<Future<Long>> lastSeqs = new java.util.ArrayList<>();
        for (List<InboundMessage> messages : chats) {
            int p = messages.get(0).partition();
            Fence fence = new Fence(p, "wg2", epochs.computeIfAbsent(p, q -> takeOver(q, "wg2")));
            Future<Long> chain = Future.succeededFuture(0L);
            for (InboundMessage m : messages) {
                chain = chain.compose(previous -> grouped.commitTurn(fence, m, List.of(HistoryEntry.user("alice", m.text())),
                        "re " + m.text(), null).map(r -> ((CommitResult.Committed) r).reply().seq()));
            }
            lastSeqs.add(chain);
        }
        // then every chat got its three replies numbered 1..3, with fewer statements than turns
        assertThat(result(Future.all(lastSeqs)).<Long>list()).allSatisfy(seq -> assertThat(seq).isEqualTo(3));
        for (List<InboundMessage> messages : chats) {
            InboundMessage first = messages.get(0);
            assertThat(result(outbox.repliesAfter(BotRef.main("acme"), "api", first.chatKey(), 0, 10))).extracting(r -> r.text())
                    .containsExactly("re one", "re two", "re three");
        }
        assertThat(grouped.commitStatements()).isLessThan(90);
    }

    @Test
    void aMessageIsAnsweredOnlyOnce() {
        String chat = chat();
        InboundMessage message = accept(chat, "m", "hello");
        int p = message.partition();
        Fence fence = new Fence(p, "w9", takeOver(p, "w9"));
        var first = result(conversations.commitTurn(fence, message, List.of(HistoryEntry.assistant("a")), "a", null));
        var second = result(conversations.commitTurn(fence, message, List.of(HistoryEntry.assistant("b")), "b", null));
        assertThat(first).isInstanceOf(CommitResult.Committed.class);
        assertThat(second).isInstanceOf(CommitResult.AlreadyDone.class);
        assertThat(result(outbox.repliesAfter(BotRef.main("acme"), "api", chat, 0, 10))).extracting(r -> r.text()).containsExactly("a");
    }

    /**
     * A gateway may serve a worker's reply notice as the reply (SECURITY.md rule 5): it must be the outbox row exactly,
     * and its token counts what a gateway would read for the turn.
     */
    @Test
    void theReplyACommitReturnsIsTheOutboxRowItWroteAloneOrGroupedEvenWithANulAndTheTokensItUsed() {
        // given two chats, each with a message, whose answers hold a NUL (PostgreSQL text cannot)
        Set<Integer> used = new java.util.HashSet<>();
        InboundMessage alone = accept(chatOfAnotherPartition(used), "n1", "one");
        InboundMessage grouped = accept(chatOfAnotherPartition(used), "n2", "two");
        Fence aloneFence = new Fence(alone.partition(), "wn", takeOver(alone.partition(), "wn"));
        Fence groupedFence = new Fence(grouped.partition(), "wn", takeOver(grouped.partition(), "wn"));
        // when one is committed alone and one in a group
        // (the one alone made two model calls, the grouped one none)
        var first = (CommitResult.Committed) result(conversations.commit(new TurnCommit(aloneFence, alone, List.of(),
                "a\u0000b", null, List.of(new TurnCommit.Usage("p", "m", 10, 2), new TurnCommit.Usage("p", "m", 20, 3)),
                null, false, null)));
        var second = (CommitResult.Committed) result(conversations.commitAll(List.of(new TurnCommit(groupedFence, grouped,
                List.of(), "c\u0000d", null, List.of(), null, false, null)))).get(0).result();
        // then each reply returned (what the worker's notice carries) equals the row a gateway reads, field by field,
        // with the tokens a gateway reads for the turn
        assertThat(first.reply()).isEqualTo(asNotice(result(outbox.replyWithTokens("acme", alone.id())).orElseThrow()));
        assertThat(second.reply()).isEqualTo(asNotice(result(outbox.replyWithTokens("acme", grouped.id())).orElseThrow()));
        assertThat(first.reply().text()).isEqualTo("a\uFFFDb");
        assertThat(first.reply().tokens()).isEqualTo(new UsageStore.TurnTokens(30, 5));
        assertThat(second.reply().tokens()).isEqualTo(new UsageStore.TurnTokens(0, 0));
        // and a reply read from the outbox carries no token counts (only a turn's notice does)
        assertThat(result(outbox.replyTo("acme", alone.id())).orElseThrow().tokens()).isNull();
    }

    private static OutboundReply asNotice(Map.Entry<OutboundReply, UsageStore.TurnTokens> read) {
        OutboundReply row = read.getKey();
        return new OutboundReply(row.id(), row.bot(), row.channel(), row.chatKey(), row.chatId(), row.seq(), row.inReplyTo(),
                row.text(), row.at(), read.getValue());
    }

    @Test
    void repliesAreNumberedPerChatAndStateTracksDoneSeq() {
        String chat = chat();
        InboundMessage m1 = accept(chat, "1", "one");
        InboundMessage m2 = accept(chat, "2", "two");
        int p = m1.partition();
        Fence fence = new Fence(p, "wr", takeOver(p, "wr"));
        var r1 = (CommitResult.Committed) result(conversations.commitTurn(fence, m1, List.of(), "re one", null));
        var r2 = (CommitResult.Committed) result(conversations.commitTurn(fence, m2, List.of(), "re two", null));
        assertThat(r1.reply().seq()).isEqualTo(1);
        assertThat(r2.reply().seq()).isEqualTo(2);
        assertThat(r2.reply().inReplyTo()).isEqualTo(m2.id());
        assertThat(result(conversations.load(m1.chatId(), 10)).doneSeq()).isEqualTo(2);
        assertThat(result(outbox.repliesAfter(BotRef.main("acme"), "api", chat, 1, 10))).extracting(r -> r.text()).containsExactly("re two");
    }

    @Test
    void pendingInPartitionPagesInChatAndSeqOrder() {
        String chat = chat();
        int p = partitioner.partitionOf("acme", "api", chat);
        accept(chat, "1", "one");
        accept(chat, "2", "two");
        List<InboundMessage> page = result(inbox.pendingInPartition(p, 0, 0, 1000));
        List<InboundMessage> ofChat = page.stream().filter(m -> m.chatKey().equals(chat)).toList();
        assertThat(ofChat).extracting(InboundMessage::text).containsExactly("one", "two");
        InboundMessage last = page.get(page.size() - 1);
        assertThat(result(inbox.pendingInPartition(p, last.chatId(), last.seq(), 1000))).isEmpty();
    }

    /** Takes the partition from whoever holds it (tests share partitions), returning the new epoch. */
    private long takeOver(int partition, String node) {
        return takeOver(partition, node, 60_000);
    }

    private long takeOver(int partition, String node, long ttlMs) {
        String current = ownerOf(partition);
        return result(leases.claim(node, Set.of(partition), ttlMs, current == null ? Set.of() : Set.of(current))).get(partition);
    }

    @Test
    void pushRepliesGoOutInChatOrderWithRetriesAndEndAsDeadLetters() {
        // given a Telegram chat with two replies committed
        String chat = "7:" + UUID.randomUUID();
        int p = partitioner.partitionOf("acme", "telegram", chat);
        InboundMessage m1 = result(inbox.accept("acme", "telegram", chat, p, "u1", "alice", "user", "one", null)).message();
        InboundMessage m2 = result(inbox.accept("acme", "telegram", chat, p, "u2", "alice", "user", "two", null)).message();
        Fence fence = new Fence(p, "wd", takeOver(p, "wd"));
        result(conversations.commitTurn(fence, m1, List.of(), "re one", null));
        result(conversations.commitTurn(fence, m2, List.of(), "re two", null));
        DeliveryStore delivery = new DeliveryStore(database.pool());
        String first = ConversationStore.replyId(m1.id());
        String second = ConversationStore.replyId(m2.id());

        // when a gateway claims / then only the first reply of the chat is claimable
        assertThat(result(delivery.claim("gw1", second, 30_000))).isEmpty();
        var claimed = result(delivery.claim("gw1", first, 30_000)).orElseThrow();
        assertThat(claimed.channel()).isEqualTo("telegram");
        assertThat(claimed.chatKey()).isEqualTo(chat);
        assertThat(claimed.attempts()).isEqualTo(1);
        assertThat(result(delivery.claim("gw2", first, 30_000))).as("claimed by another gateway").isEmpty();

        // when sending fails and is retried later / then the reply is due again, and the next still waits
        result(delivery.retryLater(first, "gw1", 0, "503 from Telegram", true));
        assertThat(result(delivery.claimNextInChat("gw1", m1.chatId(), 30_000))).get()
                .satisfies(again -> assertThat(again.id()).isEqualTo(first))
                .satisfies(again -> assertThat(again.attempts()).isEqualTo(2));
        // a send held back by pacing was not tried: its claim's attempt is given back
        result(delivery.retryLater(first, "gw1", 0, "held back", false));
        assertThat(result(delivery.claimNextInChat("gw1", m1.chatId(), 30_000))).get()
                .satisfies(again -> assertThat(again.attempts()).isEqualTo(2));
        // and a part of a long reply recorded as out is known to the next claim
        assertThat(result(delivery.partsSent(first, "gw1", 1))).isTrue();
        assertThat(result(delivery.partsSent(first, "gw2", 2))).as("not the claim holder").isFalse();
        result(delivery.retryLater(first, "gw1", 0, "503 from Telegram", true));
        assertThat(result(delivery.claimNextInChat("gw1", m1.chatId(), 30_000))).get()
                .satisfies(again -> assertThat(again.partsSent()).isEqualTo(1));

        // when it finally fails for good / then it is a dead letter and the next reply can go
        result(delivery.dead(first, "gw1", "403 bot was blocked by the user"));
        var letters = result(new DeadLetterStore(database.pool()).list(BotRef.main("acme"), 0, 1000));
        assertThat(letters).anySatisfy(letter -> {
            assertThat(letter.kind()).isEqualTo("outbound");
            assertThat(letter.refId()).isEqualTo(first);
            assertThat(letter.error()).contains("blocked");
            assertThat(letter.payload().getString("text")).isEqualTo("re one");
        });
        var next = result(delivery.claimNextInChat("gw1", m1.chatId(), 30_000)).orElseThrow();
        assertThat(next.id()).isEqualTo(second);
        assertThat(result(delivery.delivered(second, "gw1"))).isTrue();

        // and replaying the dead letter queues the reply again
        assertThat(result(outbox.requeue(first))).isTrue();
        assertThat(result(delivery.claim("gw1", first, 30_000))).isPresent();
    }

    @Test
    void anExpiredClaimCanBeTakenOverByAnotherGateway() {
        String chat = "8:" + UUID.randomUUID();
        int p = partitioner.partitionOf("acme", "telegram", chat);
        InboundMessage m = result(inbox.accept("acme", "telegram", chat, p, "u1", "alice", "user", "one", null)).message();
        result(conversations.commitTurn(new Fence(p, "we", takeOver(p, "we")), m, List.of(), "re", null));
        DeliveryStore delivery = new DeliveryStore(database.pool());
        String id = ConversationStore.replyId(m.id());
        assertThat(result(delivery.claim("gw1", id, 1))).isPresent();
        // the claim ends 1 ms after it was made, by the database's clock
        Await.until("the expired claim to be taken over", Duration.ofSeconds(10), () -> result(delivery.claim("gw2", id, 30_000))
                .map(c -> {
                    assertThat(c.attempts()).isEqualTo(2);
                    return true;
                }).orElse(false));
        assertThat(result(delivery.delivered(id, "gw1"))).as("the first claim is gone").isFalse();
    }

    @Test
    void pullChannelRepliesAreNeverInTheDeliveryQueue() {
        String chat = chat();
        InboundMessage m = accept(chat, "x", "hi");
        result(conversations.commitTurn(new Fence(m.partition(), "wf", takeOver(m.partition(), "wf")), m, List.of(), "re", null));
        assertThat(result(new DeliveryStore(database.pool()).claim("gw1", ConversationStore.replyId(m.id()), 30_000))).isEmpty();
    }

    @Test
    void oneGatewayAtATimePollsABot() {
        ChannelBotStore bots = new ChannelBotStore(database.pool(), io.clawfleet.shared.testing.TestSecrets.tenantKeys(database.pool()));
        ChannelBot bot = result(bots.register(BotRef.main("acme"), "telegram", "helper_bot", "123:" + UUID.randomUUID(), "http://127.0.0.1:1"));
        assertThat(result(bots.claimPolling("gw1", 60_000, 1000))).extracting(ChannelBot::id).contains(bot.id());
        assertThat(result(bots.claimPolling("gw2", 60_000, 1000))).extracting(ChannelBot::id).doesNotContain(bot.id());
        assertThat(result(bots.advance(bot.id(), "gw1", 42, 60_000))).isTrue();
        assertThat(result(bots.advance(bot.id(), "gw2", 50, 60_000))).as("not the lease holder").isFalse();
        assertThat(result(bots.advance(bot.id(), "gw1", 10, 60_000))).isTrue();
        assertThat(result(bots.get(bot.id())).orElseThrow().updateOffset()).as("the offset never goes back").isEqualTo(42);
        result(bots.release(bot.id(), "gw1"));
        assertThat(result(bots.claimPolling("gw2", 60_000, 1000))).extracting(ChannelBot::id).contains(bot.id());
    }

    /** Issue 13: a suspended tenant's bots are not polled, and a poller holding one stops at its next advance. */
    @Test
    void aSuspendedTenantsBotsAreNotPolled() {
        ChannelBotStore bots = new ChannelBotStore(database.pool(), io.clawfleet.shared.testing.TestSecrets.tenantKeys(database.pool()));
        TenantStore tenants = new TenantStore(database.pool());
        String tenant = "susp-" + UUID.randomUUID().toString().substring(0, 8);
        result(tenants.ensure(tenant, "Suspended", "key-" + tenant + "-0123456789abcdef"));
        ChannelBot bot = result(bots.register(BotRef.main(tenant), "telegram", "s_bot", "123:" + UUID.randomUUID(), "http://127.0.0.1:1"));
        assertThat(result(bots.claimPolling("gw1", 60_000, 1000))).extracting(ChannelBot::id).contains(bot.id());
        result(tenants.update(tenant, null, "suspended"));
        assertThat(result(bots.advance(bot.id(), "gw1", 7, 60_000))).as("the holder stops").isFalse();
        result(bots.release(bot.id(), "gw1"));
        assertThat(result(bots.claimPolling("gw2", 60_000, 1000))).extracting(ChannelBot::id).doesNotContain(bot.id());
        result(tenants.update(tenant, null, "active"));
        assertThat(result(bots.claimPolling("gw2", 60_000, 1000))).extracting(ChannelBot::id).contains(bot.id());
    }

    private long epochOf(int partition) {
        return result(leases.all()).stream().filter(l -> l.partition() == partition).findFirst().orElseThrow().epoch();
    }

    private String ownerOf(int partition) {
        return result(leases.all()).stream().filter(l -> l.partition() == partition).findFirst().orElseThrow().owner();
    }
}
