package io.clawfleet.worker.turn;

import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.bus.ReplyNotices;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.TurnRequest;
import io.clawfleet.shared.message.WakeUp;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.store.ConversationStore;
import io.clawfleet.shared.store.InboxStore;
import io.clawfleet.worker.ownership.PartitionListener;
import io.clawfleet.worker.ownership.PartitionOwnership;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.MessageConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * Runs the turns of the partitions this worker owns: one {@link ChatLane} per chat, one turn at a
 * time per chat, many chats at once (up to the worker's turn limit), no lock shared across chats.
 * A chat ready for its next turn asks {@link FairShare} for a slot, so when the slots are all taken
 * they go to tenants (and bots) in fair shares, not to whoever queued the most chats; the
 * {@link QueueBudget} keeps one tenant from filling the worker's memory the same way, and {@link TurnSlots} holds a
 * tenant to its concurrent-turn limit across the cluster. Work arrives by
 * wake-ups, by the inbox scan on claim, and by a periodic sweep for wake-ups that were lost.
 * Everything runs on the worker's event loop.
 */
public final class ConversationDispatcher implements PartitionListener {

    private static final Logger LOG = LoggerFactory.getLogger(ConversationDispatcher.class);
    private static final int SCAN_PAGE = 1_000;
    private static final long SWEEP_INTERVAL_MS = 2_000;
    private static final long STALE_AFTER_MS = 2_000;
    private static final long IDLE_LANE_NANOS = TimeUnit.MINUTES.toNanos(10);
    private static final long RETRY_DELAY_MS = 1_000;

    /** A partition being served: its epoch, wake-up subscription and chats. */
    private static final class Served {
        final int partition;
        final long epoch;
        final Map<Long, ChatLane> lanes = new HashMap<>();
        /**
         * Messages above this inbox id were committed after this worker claimed the partition, so no
         * earlier owner can have started their turns (its ledger writes are fenced off). Until the
         * read that sets it returns, every message may have been started.
         */
        long freshAbove = Long.MAX_VALUE;
        /** What the lanes of this worker's previous tenure knew, when it claimed the partition straight back. */
        Map<Long, ChatLane.Carried> carried = Map.of();
        MessageConsumer<WakeUp> consumer;
        int inFlight;
        boolean draining;
        Promise<Void> drained;

        Served(int partition, long epoch) {
            this.partition = partition;
            this.epoch = epoch;
        }
    }

    private final Vertx vertx;
    private final String nodeId;
    private final InboxStore inbox;
    private final ConversationStore conversations;
    private final TurnHandler turns;
    private final ClawfleetConfig.Worker config;
    private final Metrics metrics;
    private final BusSigner signer;
    private final Map<Integer, Served> served = new HashMap<>();
    /**
     * The partitions this worker lost, with what it knew of them: claimed back at the next epoch, no other owner can
     * have started a turn in between, so the new tenure goes on from the old one. At most one per partition.
     */
    private final Map<Integer, Tenure> lostTenures = new HashMap<>();

    /** What a worker knew of a partition when it lost it (see {@link #lostTenures}). */
    private record Tenure(long epoch, long freshAbove, Map<Long, ChatLane.Carried> chats, long lostAtNanos) {
    }
    private final QueueBudget budget;
    private final TurnSlots tenantSlots;
    /** Chats ready for a turn, until a slot is theirs (at once when one is free); a chat waits here at most once. */
    private final FairShare<ChatLane> waitingForSlot = FairShare.equalShares(ChatLane::bot);
    private PartitionOwnership ownership;
    /** Written on the event loop only; volatile so status readers see it. */
    private volatile int turnsInFlight;
    private long sweepTimer = -1;

    public ConversationDispatcher(Vertx vertx, String nodeId, InboxStore inbox, ConversationStore conversations,
                                  TurnHandler turns, ClawfleetConfig.Worker config, Metrics metrics, TurnSlots tenantSlots,
                                  BusSigner signer) {
        this.vertx = Objects.requireNonNull(vertx);
        this.nodeId = Objects.requireNonNull(nodeId);
        this.inbox = Objects.requireNonNull(inbox);
        this.conversations = Objects.requireNonNull(conversations);
        this.turns = Objects.requireNonNull(turns);
        this.config = Objects.requireNonNull(config);
        this.metrics = Objects.requireNonNull(metrics);
        this.budget = new QueueBudget(config.maxQueuedMessages());
        this.tenantSlots = Objects.requireNonNull(tenantSlots);
        this.signer = Objects.requireNonNull(signer);
        tenantSlots.onSlots(this::grantSlots);
    }

    /** Wires the lease side in (they refer to each other). */
    public void attach(PartitionOwnership ownership) {
        this.ownership = Objects.requireNonNull(ownership);
    }

    public void start() {
        metrics.gauge("clawfleet.turns.in_flight", () -> turnsInFlight, "node", nodeId);
        metrics.gauge("clawfleet.chats.active", () -> served.values().stream().mapToInt(s -> s.lanes.size()).sum(), "node", nodeId);
        metrics.gauge("clawfleet.lanes.queued_messages", budget::used, "node", nodeId);
        metrics.gauge("clawfleet.turns.waiting_for_slot", waitingForSlot::size, "node", nodeId);
        sweepTimer = vertx.setPeriodic(SWEEP_INTERVAL_MS, id -> sweep());
    }

    public void stop() {
        if (sweepTimer >= 0) {
            vertx.cancelTimer(sweepTimer);
        }
    }

    public int turnsInFlight() {
        return turnsInFlight;
    }

    @Override
    public void acquired(int partition, long epoch) {
        Served previous = served.remove(partition);
        if (previous != null && previous.consumer != null) {
            previous.consumer.unregister();
        }
        Served s = new Served(partition, epoch);
        served.put(partition, s);
        Tenure before = lostTenures.remove(partition);
        Future<Long> watermark;
        if (before != null && before.epoch() == epoch - 1 && !idleLongerThan(before.lostAtNanos())) {
            // Claimed straight back (the lease ran out while the database was away, say): the turns this worker started
            // are its own to retry, not restarts after a death, and what was fresh then was started by no one else.
            s.freshAbove = before.freshAbove();
            s.carried = before.chats();
            watermark = Future.succeededFuture(s.freshAbove);
            metrics.increment("clawfleet.partitions.reclaimed", "node", nodeId);
        } else {
            watermark = inbox.highestId().onSuccess(id -> s.freshAbove = id);
        }
        s.consumer = vertx.eventBus().consumer(Addresses.partitionWake(partition), message -> offer(message.body().message()));
        // Subscribe first, then scan: a message accepted in between is seen by one or the other.
        // The scan also waits for the watermark, so the messages it finds know whether they are fresh.
        Future.join(s.consumer.completion(), watermark).onComplete(r -> scan(s, 0, 0));
    }

    @Override
    public Future<Void> drain(int partition) {
        Served s = served.get(partition);
        if (s == null) {
            return Future.succeededFuture();
        }
        s.draining = true;
        if (s.consumer != null) {
            s.consumer.unregister();
        }
        if (s.inFlight == 0) {
            return Future.succeededFuture();
        }
        s.drained = Promise.promise();
        return s.drained.future();
    }

    @Override
    public void lost(int partition) {
        Served s = served.remove(partition);
        if (s == null) {
            return;
        }
        if (s.consumer != null) {
            s.consumer.unregister();
        }
        waitingForSlot.removeIf(lane -> lane.partition() == partition);
        Map<Long, ChatLane.Carried> known = new HashMap<>(s.carried);
        s.lanes.forEach((chat, lane) -> {
            ChatLane.Carried carried = lane.carried();
            if (carried != null) {
                known.put(chat, carried);
            }
        });
        lostTenures.put(partition, new Tenure(s.epoch, s.freshAbove, known, System.nanoTime()));
        s.lanes.values().forEach(ChatLane::discard);
        if (s.drained != null) {
            s.drained.tryComplete();
        }
        LOG.debug("partition dropped [node: {}, partition: {}, chats: {}]", nodeId, partition, s.lanes.size());
    }

    private void scan(Served s, long afterChat, long afterSeq) {
        if (served.get(s.partition) != s) {
            return;
        }
        inbox.pendingInPartition(s.partition, afterChat, afterSeq, SCAN_PAGE).onComplete(result -> {
            if (result.failed()) {
                LOG.warn("inbox scan failed, the sweep will retry [node: {}, partition: {}]: {}", nodeId, s.partition,
                        result.cause().getMessage());
                return;
            }
            List<InboundMessage> page = result.result();
            page.forEach(this::offer);
            if (page.size() == SCAN_PAGE) {
                InboundMessage last = page.get(page.size() - 1);
                scan(s, last.chatId(), last.seq());
            }
        });
    }

    /** A message is pending in a partition this worker may own. */
    void offer(InboundMessage message) {
        Served s = served.get(message.partition());
        if (s == null || s.draining) {
            return;
        }
        ChatLane lane = s.lanes.computeIfAbsent(message.chatId(), id -> {
            ChatLane created = new ChatLane(id, message.partition(), message.bot(), config.maxQueuedPerChat(), budget);
            ChatLane.Carried earlier = s.carried.isEmpty() ? null : s.carried.remove(id);
            if (earlier != null) {
                created.carry(earlier);
            }
            return created;
        });
        lane.offer(message);
        pump(s, lane);
    }

    private void pump(Served s, ChatLane lane) {
        if (served.get(s.partition) != s || s.draining) {
            return;
        }
        step(s, lane, lane.next());
    }

    /**
     * Does the lane's next step. A turn always goes through the scheduler, also for the chat whose turn
     * just ended: otherwise a chat with a backlog would keep its slot, turn after turn, past every other
     * tenant waiting.
     */
    private void step(Served s, ChatLane lane, ChatLane.Step step) {
        switch (step) {
            case LOAD -> load(s, lane);
            case FETCH -> fetch(s, lane);
            case RUN -> {
                waitingForSlot.add(lane);
                grantSlots();
            }
            case IDLE, BUSY -> {
            }
        }
    }

    private void load(Served s, ChatLane lane) {
        lane.begin();
        conversations.load(lane.chatId(), config.historyMessages() * 2).onComplete(result -> {
            if (result.failed()) {
                lane.failed();
                retryLater(s, lane, "load", result.cause());
                return;
            }
            var state = result.result();
            lane.loaded(state);
            pump(s, lane);
        });
    }

    private void fetch(Served s, ChatLane lane) {
        long offeredBefore = lane.highestOffered();
        long afterSeq = lane.begin();
        int limit = config.maxQueuedPerChat();
        metrics.increment("clawfleet.lane.fetches", "node", nodeId);
        inbox.pendingInChat(lane.chatId(), afterSeq, limit).onComplete(result -> {
            if (result.failed()) {
                lane.failed();
                retryLater(s, lane, "fetch", result.cause());
                return;
            }
            lane.fetched(result.result(), offeredBefore, limit);
            pump(s, lane);
        });
    }

    private void runTurn(Served s, ChatLane lane) {
        InboundMessage message = lane.head();
        lane.begin();
        turnsInFlight++;
        s.inFlight++;
        // Only the first message this owner runs in a chat may have been started before the claim. Counting the ones
        // queued behind it too made a chat's whole backlog "restarted" after a takeover: run one at a time, and
        // counted towards worker.maxTurnStarts though never started (the chaos run with floods).
        boolean retry = lane.startedBefore(message.id());
        boolean mayHaveStarted = lane.mayHaveStartedElsewhere(message.id() <= s.freshAbove) || retry;
        lane.starting(message.id());
        tenantSlots.started(message.tenantId());
        TurnRequest turn = new TurnRequest(s.partition, s.epoch, message, message.contextMode(), mayHaveStarted, retry);
        turns.run(turn, lane).onComplete(result -> {
            turnsInFlight--;
            s.inFlight--;
            tenantSlots.ended(message.tenantId());
            TurnOutcome outcome = result.succeeded() ? result.result() : new TurnOutcome.Failed(result.cause());
            finish(s, lane, turn, outcome);
            if (s.draining && s.inFlight == 0 && s.drained != null) {
                s.drained.tryComplete();
            }
            grantSlots();
        });
    }

    private void finish(Served s, ChatLane lane, TurnRequest turn, TurnOutcome outcome) {
        InboundMessage message = turn.message();
        switch (outcome) {
            case TurnOutcome.Committed committed -> {
                lane.done(message.seq(), committed.appended().toArray(io.clawfleet.shared.store.HistoryEntry[]::new));
                lane.trimHistory(config.historyMessages() * 2);
                if (committed.reloadState()) {
                    lane.reload();
                }
                ReplyNotices.publish(vertx.eventBus(), signer, committed.reply());
                metrics.increment("clawfleet.turns.committed", "tenant", message.tenantId());
                maintain(s, lane, turn);
                pump(s, lane);
            }
            case TurnOutcome.AlreadyDone done -> {
                lane.doneElsewhere(message.seq());
                metrics.increment("clawfleet.turns.already_done", "node", nodeId);
                pump(s, lane);
            }
            case TurnOutcome.Fenced fenced -> ownership.fenced(s.partition, s.epoch);
            case TurnOutcome.Failed failed -> {
                lane.failed();
                retryLater(s, lane, "turn", failed.cause());
            }
        }
    }

    /** Upkeep of the chat beside its next turns; when it changed the chat, the lane reads it again. */
    private void maintain(Served s, ChatLane lane, TurnRequest turn) {
        if (lane.maintaining()) {
            return;
        }
        lane.maintaining(true);
        turns.maintain(turn, lane).onComplete(result -> {
            lane.maintaining(false);
            if (result.failed()) {
                LOG.warn("chat upkeep failed [node: {}, partition: {}, chat: {}]: {}", nodeId, s.partition, lane.chatId(),
                        result.cause().getMessage());
            } else if (result.result()) {
                lane.reload();
                pump(s, lane);
            }
        });
    }

    /**
     * Gives free turn slots to the waiting chats, in fair-share order, passing over the tenants at their concurrent-turn
     * limit (their chats keep their places until one of the tenant's turns ends, here or on another worker).
     */
    private void grantSlots() {
        while (turnsInFlight < config.maxConcurrentTurns()) {
            ChatLane lane = waitingForSlot.poll(tenantSlots::mayStart);
            if (lane == null) {
                return;
            }
            Served s = served.get(lane.partition());
            if (s == null || s.draining || s.lanes.get(lane.chatId()) != lane) {
                continue;
            }
            // While it waited the lane may have started a reload (its upkeep changed the chat): do that instead.
            ChatLane.Step step = lane.next();
            if (step != ChatLane.Step.RUN) {
                step(s, lane, step);
            } else if (ownership.mayServe(s.partition)) {
                runTurn(s, lane);
            }
        }
    }

    private static boolean idleLongerThan(long sinceNanos) {
        return System.nanoTime() - sinceNanos > IDLE_LANE_NANOS;
    }

    private void retryLater(Served s, ChatLane lane, String step, Throwable cause) {
        LOG.warn("chat step failed, retrying in {} ms [node: {}, partition: {}, chat: {}, step: {}]: {}",
                RETRY_DELAY_MS, nodeId, s.partition, lane.chatId(), step, cause.getMessage());
        vertx.setTimer(RETRY_DELAY_MS, id -> pump(s, lane));
    }

    /** Safety net: pick up messages whose wake-up was lost, restart stalled lanes, forget idle chats. */
    private void sweep() {
        // A partition not claimed back for as long as a lane is kept idle is forgotten: claiming it later counts the
        // turns it finds as any takeover does (the cautious side).
        lostTenures.values().removeIf(tenure -> idleLongerThan(tenure.lostAtNanos()));
        if (served.isEmpty()) {
            return;
        }
        waitingForSlot.forgetIdle();
        for (Served s : served.values()) {
            s.lanes.values().removeIf(lane -> lane.idleLongerThan(IDLE_LANE_NANOS));
            for (ChatLane lane : List.copyOf(s.lanes.values())) {
                pump(s, lane);
            }
        }
        int[] partitions = served.values().stream().filter(s -> !s.draining).mapToInt(s -> s.partition).toArray();
        if (partitions.length == 0) {
            return;
        }
        inbox.stalePending(partitions, STALE_AFTER_MS, SCAN_PAGE).onSuccess(stale -> {
            if (!stale.isEmpty()) {
                metrics.increment("clawfleet.lane.stale_found", "node", nodeId);
            }
            stale.forEach(this::offer);
        });
    }
}
