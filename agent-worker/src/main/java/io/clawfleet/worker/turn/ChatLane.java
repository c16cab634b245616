package io.clawfleet.worker.turn;

import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.ConversationStore;
import io.clawfleet.shared.store.HistoryEntry;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The order keeper of one chat on its owning worker: which message may run next.
 *
 * <p>Intake numbers a chat's messages by commit ({@code seq}, under the chat row's lock), so if
 * message N is known to be committed, every message before it is committed or will never exist.
 * A message may run when it directly follows the last one done, or when a read of the inbox has
 * shown that nothing pending lies before it. Anything else (a wake-up that overtook an earlier
 * one, messages beyond the memory cap) is settled by reading the inbox. Not thread-safe: a lane
 * lives on its worker's event loop.
 */
public final class ChatLane {

    /** What the lane needs done next. */
    public enum Step { IDLE, LOAD, FETCH, RUN, BUSY }

    private final long chatId;
    private final int partition;
    /** The bot the chat belongs to: the turn scheduler and the queue budget share by tenant and bot. */
    private final BotRef bot;
    private final int cap;
    private final QueueBudget budget;
    private final TreeMap<Long, InboundMessage> queue = new TreeMap<>();
    private boolean loaded;
    private boolean busy;
    private boolean needsFetch;
    private long doneSeq;
    /** Every seq up to here is queued, done, or known never to exist. */
    private long knownThrough;
    /** Highest seq offered so far: all below it were committed before it was offered. */
    private long highestOffered;
    private String summary;
    private final List<HistoryEntry> history = new ArrayList<>();
    private ConversationStore.ChatState state;
    /** Stored messages not compacted yet, as far as this lane knows. */
    private long unconsolidated;
    private boolean maintaining;
    /** The message whose turn this lane started last: a retry of it may find its own ledger steps. */
    private long lastStarted = -1;
    /**
     * A turn of this lane committed on this worker since it claimed the partition. A chat runs one turn at a time, in
     * order, so the message after one this owner committed was never started by an earlier owner: that one was still
     * pending when this owner claimed the partition (else the commit would have found it done).
     */
    private boolean committedHere;
    private long lastActiveNanos = System.nanoTime();
    /** Set by a read that gave places of held messages to an earlier one (see {@link #makeRoom}). */
    private boolean gaveBack;

    public ChatLane(long chatId, int partition, BotRef bot, int cap, QueueBudget budget) {
        this.chatId = chatId;
        this.partition = partition;
        this.bot = java.util.Objects.requireNonNull(bot);
        this.cap = cap;
        this.budget = budget;
    }

    public long chatId() {
        return chatId;
    }

    public int partition() {
        return partition;
    }

    public BotRef bot() {
        return bot;
    }

    /** A message is pending (from a wake-up, a scan or a fetch). Duplicates and done ones are ignored. */
    public void offer(InboundMessage message) {
        if (loaded && message.seq() <= doneSeq) {
            return;
        }
        highestOffered = Math.max(highestOffered, message.seq());
        if (queue.containsKey(message.seq())) {
            return;
        }
        if (queue.size() >= cap || !budget.tryAcquire(bot.tenantId())) {
            // Beyond the caps the message waits in the inbox; a fetch brings it in order later.
            needsFetch = true;
            return;
        }
        queue.put(message.seq(), message);
    }

    /** The seq of the approval message the chat's state was last read for (see {@link #next()}). */
    private long readFor = -1;

    /** Decides the next step; RUN means {@link #head()} may be answered now. */
    public Step next() {
        if (busy) {
            return Step.BUSY;
        }
        if (!loaded) {
            return queue.isEmpty() && !needsFetch ? Step.IDLE : Step.LOAD;
        }
        drop(queue.headMap(doneSeq, true));
        Map.Entry<Long, InboundMessage> head = queue.firstEntry();
        if (head != null && (head.getKey() == doneSeq + 1 || head.getKey() <= knownThrough)) {
            if (InboundMessage.KIND_APPROVAL.equals(head.getValue().kind()) && readFor != head.getKey()) {
                // An admin's decision was written beside the waiting call after this lane read the chat: read it again.
                readFor = head.getKey();
                loaded = false;
                return Step.LOAD;
            }
            return Step.RUN;
        }
        if (head == null && !needsFetch) {
            return Step.IDLE;
        }
        // With the worker's memory (or this tenant's part of it) full, a read by a lane holding nothing could hold
        // nothing new: wait for room (the sweep retries). A lane holding messages reads anyway: they wait for one it
        // lacks, and the read gives their places to that one (see fetched), or else they would hold them for ever.
        return budget.hasRoom(bot.tenantId()) || !queue.isEmpty() ? Step.FETCH : Step.IDLE;
    }

    public InboundMessage head() {
        return queue.firstEntry().getValue();
    }

    /** Marks the lane busy with a load, fetch or turn; returns the seq the fetch must read after. */
    public long begin() {
        busy = true;
        lastActiveNanos = System.nanoTime();
        return doneSeq;
    }

    /** The chat's stored state arrived: what is done, its settings, and the recent history. */
    public void loaded(ConversationStore.ChatState stored) {
        state = stored;
        unconsolidated = stored.storedMessages();
        loaded(stored.doneSeq(), stored.summary(), stored.history());
    }

    /** The chat's stored state arrived (what is done and the recent history only). */
    public void loaded(long storedDoneSeq, String storedSummary, List<HistoryEntry> storedHistory) {
        if (state == null || state.doneSeq() != storedDoneSeq) {
            state = new ConversationStore.ChatState(storedDoneSeq, storedSummary, storedHistory);
        }
        busy = false;
        loaded = true;
        doneSeq = Math.max(doneSeq, storedDoneSeq);
        knownThrough = Math.max(knownThrough, doneSeq);
        summary = storedSummary;
        history.clear();
        history.addAll(storedHistory);
    }

    /**
     * A read of the chat's pending messages (seq above {@code afterSeq}) came back.
     *
     * @param offeredBefore {@link #highestOffered()} when the read was issued: those messages were
     *                      committed before it, so the read saw every one still pending
     * @param limit         the read's row limit; a full page means more may be waiting
     */
    public void fetched(List<InboundMessage> pending, long offeredBefore, int limit) {
        busy = false;
        boolean complete = pending.size() < limit;
        long maxRead = pending.isEmpty() ? 0 : pending.get(pending.size() - 1).seq();
        long settled = complete ? Math.max(maxRead, offeredBefore) : maxRead;
        // Queued messages the read settled but did not return were answered elsewhere: drop them.
        java.util.Set<Long> pendingSeqs = new java.util.HashSet<>();
        pending.forEach(m -> pendingSeqs.add(m.seq()));
        int before = queue.size();
        queue.headMap(settled, true).keySet().removeIf(seq -> !pendingSeqs.contains(seq));
        budget.release(bot.tenantId(), before - queue.size());
        // Rows come in seq order; hold the longest prefix that fits, the rest is read again later.
        boolean allTaken = true;
        long lastHeld = 0;
        gaveBack = false;
        for (InboundMessage message : pending) {
            if (!queue.containsKey(message.seq())) {
                if (!makeRoom(message.seq())) {
                    allTaken = false;
                    break;
                }
                queue.put(message.seq(), message);
            }
            lastHeld = message.seq();
        }
        knownThrough = Math.max(knownThrough, allTaken ? settled : lastHeld);
        // Messages given back that this read did not return (offered after it was issued) are read again too.
        needsFetch = !complete || !allTaken || gaveBack;
    }

    /**
     * Takes a place for a message the lane lacks; if the caps refuse, the messages it holds after that one (which
     * cannot run before it) give their places back first, to be read again later.
     */
    private boolean makeRoom(long seq) {
        if (queue.size() < cap && budget.tryAcquire(bot.tenantId())) {
            return true;
        }
        Map<Long, InboundMessage> later = queue.tailMap(seq, false);
        if (later.isEmpty()) {
            return false;
        }
        drop(later);
        gaveBack = true;
        return queue.size() < cap && budget.tryAcquire(bot.tenantId());
    }

    /** The head message's turn committed (or was found done): move on. */
    public void done(long seq, HistoryEntry... appended) {
        busy = false;
        committedHere = true;
        doneSeq = Math.max(doneSeq, seq);
        knownThrough = Math.max(knownThrough, seq);
        if (queue.remove(seq) != null) {
            budget.release(bot.tenantId(), 1);
        }
        history.addAll(List.of(appended));
        unconsolidated += appended.length;
        lastActiveNanos = System.nanoTime();
    }

    /** A turn for this message is starting. */
    public void starting(long messageId) {
        lastStarted = messageId;
    }

    /**
     * Whether the head's turn may have been started by an earlier owner of the partition, given that it was committed
     * before the claim ({@code beforeClaim}): only the first message this owner runs in a chat can have been.
     */
    public boolean mayHaveStartedElsewhere(boolean beforeClaim) {
        return beforeClaim && !committedHere;
    }

    /**
     * What this lane knows of its chat's turns that stays true when its worker claims the partition straight back, no
     * other owner between (its lease ran out while the database was away): which message it started last, and whether
     * it committed one. Null when it knows nothing worth keeping.
     */
    public Carried carried() {
        return lastStarted < 0 && !committedHere ? null : new Carried(lastStarted, committedHere);
    }

    /** Takes over what the lane of the worker's previous tenure knew (see {@link #carried()}). */
    public void carry(Carried earlier) {
        lastStarted = earlier.lastStarted();
        committedHere = earlier.committedHere();
    }

    /** See {@link #carried()}. */
    public record Carried(long lastStarted, boolean committedHere) {
    }

    /** Whether this lane started a turn for this message before (which may have recorded steps). */
    public boolean startedBefore(long messageId) {
        return lastStarted == messageId;
    }

    /** Stored messages of the chat not compacted yet (as of the last load, plus what turns added since). */
    public long unconsolidated() {
        return unconsolidated;
    }

    /** Whether upkeep (compaction) of the chat is under way. */
    public boolean maintaining() {
        return maintaining;
    }

    public void maintaining(boolean underWay) {
        maintaining = underWay;
    }

    /** Someone else answered the head message: our history is stale, reload before the next turn. */
    public void doneElsewhere(long seq) {
        boolean committed = committedHere;
        done(seq);
        // Done by an earlier owner: it may have started the next message too.
        committedHere = committed;
        loaded = false;
    }

    /** The chat's state changed in the database (a tool, an approval): read it again before the next turn. */
    public void reload() {
        loaded = false;
    }

    /** The chat's settings as last loaded (role, pending approval, skills, ...). */
    public ConversationStore.ChatState state() {
        return state;
    }

    /** A step failed; the lane may be retried later (the inbox still holds everything). */
    public void failed() {
        busy = false;
        lastActiveNanos = System.nanoTime();
    }

    /** The lane is dropped (its partition went away): give its memory back. */
    public void discard() {
        budget.release(bot.tenantId(), queue.size());
        queue.clear();
    }

    private void drop(Map<Long, InboundMessage> entries) {
        budget.release(bot.tenantId(), entries.size());
        entries.clear();
    }

    /** Keeps the cached history to the last {@code max} entries. */
    public void trimHistory(int max) {
        if (history.size() > max) {
            history.subList(0, history.size() - max).clear();
        }
    }

    public List<HistoryEntry> history() {
        return history;
    }

    public String summary() {
        return summary;
    }

    public long highestOffered() {
        return highestOffered;
    }

    public boolean busy() {
        return busy;
    }

    public int queued() {
        return queue.size();
    }

    public boolean idleLongerThan(long nanos) {
        return !busy && queue.isEmpty() && !needsFetch && System.nanoTime() - lastActiveNanos > nanos;
    }
}
