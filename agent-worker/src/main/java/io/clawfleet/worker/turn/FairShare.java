package io.clawfleet.worker.turn;

import io.clawfleet.shared.store.BotRef;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.ToIntFunction;

/**
 * The order in which chats waiting for a turn slot get one: weighted fair shares across tenants, equal
 * shares across the bots of a tenant, and first come, first served across the chats of one bot.
 *
 * <p>Why: a worker's turn slots (its bounded model concurrency) are shared by the chats of many tenants.
 * Served in arrival order, a tenant with a hundred busy chats keeps a hundred chats ahead of a tenant
 * with one, and the quiet tenant waits for all of them. Here each tenant with chats waiting gets slots in
 * proportion to its weight, however many chats it has waiting; the same holds for the bots inside it.
 *
 * <p>How: start-time fair queuing (Goyal, Vin and Cheng, SIGCOMM 1996), applied at two levels: first to
 * pick a tenant, then to pick one of that tenant's bots. Every waiting flow (tenant or bot) carries a
 * virtual start tag; the flow with the smallest tag is served (ties in the order they started waiting),
 * the level's virtual time becomes that tag, and the flow's finish tag is its start plus one turn divided
 * by its weight. A flow that starts waiting gets {@code max(virtual time, finish tag of its last turn)}:
 * <ul>
 *   <li>a tenant idle for an hour resumes at the present, so it has banked no credit and cannot burst past
 *       the others (its old, small tags are forgotten);</li>
 *   <li>a tenant whose only chat just got a slot cannot get a second one ahead of its turn by leaving and
 *       coming back.</li>
 * </ul>
 * A turn's length is not known before it runs, so each turn counts as one unit; the turn slots bound what
 * any one turn can hold. Chosen over deficit round robin because the virtual time makes "no banked credit"
 * a single {@code max}, and because it is exact for unit costs without quanta to tune.
 *
 * <p>Not thread-safe: it lives on the worker's event loop, like the lanes it orders.
 *
 * @param <T> what waits (a {@link ChatLane} in the worker); identity decides whether it is already waiting
 */
public final class FairShare<T> {

    /** Virtual time of one turn at weight 1; a weight divides it. */
    static final long TURN = 1_000_000;
    /** Weights are clamped to 1..this, so a tag step never rounds to nothing. */
    static final int MAX_WEIGHT = 1_000;

    private final ToIntFunction<String> tenantWeight;
    private final Function<T, BotRef> botOf;
    private final Level<Tenant<T>> tenants = new Level<>();
    private final Set<T> waiting = new HashSet<>();

    /**
     * @param tenantWeight a tenant's weight (1 = an equal share), read when the tenant starts waiting after
     *                     it was forgotten; a tenant that keeps waiting keeps the weight it had
     * @param botOf        the bot (and so the tenant) an entry belongs to
     */
    public FairShare(ToIntFunction<String> tenantWeight, Function<T, BotRef> botOf) {
        this.tenantWeight = Objects.requireNonNull(tenantWeight);
        this.botOf = Objects.requireNonNull(botOf);
    }

    /** Equal shares for every tenant. */
    public static <T> FairShare<T> equalShares(Function<T, BotRef> botOf) {
        return new FairShare<>(tenant -> 1, botOf);
    }

    /** Queues an entry behind the other chats of its bot; false if it is already waiting. */
    public boolean add(T entry) {
        if (!waiting.add(entry)) {
            return false;
        }
        BotRef bot = botOf.apply(entry);
        Tenant<T> tenant = tenants.flows.computeIfAbsent(bot.tenantId(), id -> new Tenant<>(id, cost(tenantWeight.applyAsInt(id))));
        Bot<T> flow = tenant.bots.flows.computeIfAbsent(bot.botId(), id -> new Bot<>(TURN));
        flow.entries.add(entry);
        if (!flow.waiting) {
            tenant.bots.enter(flow);
        }
        if (!tenant.waiting) {
            tenants.enter(tenant);
        }
        return true;
    }

    /** Takes the entry whose turn it is by fair share, or null if none waits. */
    public T poll() {
        return poll(tenant -> true);
    }

    /**
     * Takes the entry whose turn it is by fair share among the tenants that may start a turn now, or null if none of
     * them waits. A tenant passed over (at its concurrent-turn limit) keeps its place: it is served first once it may
     * start again, but it has banked at most the one turn it was due, as any flow that waited.
     */
    public T poll(Predicate<String> tenantMayStart) {
        Tenant<T> tenant = tenants.serve(flow -> tenantMayStart.test(flow.id));
        if (tenant == null) {
            return null;
        }
        Bot<T> bot = tenant.bots.serve();
        T entry = bot.entries.poll();
        waiting.remove(entry);
        if (!bot.entries.isEmpty()) {
            tenant.bots.enter(bot);
        }
        if (!tenant.bots.queue.isEmpty()) {
            tenants.enter(tenant);
        }
        return entry;
    }

    /** Drops the waiting entries that match (the chats of a partition this worker lost). */
    public void removeIf(Predicate<T> filter) {
        for (Tenant<T> tenant : tenants.flows.values()) {
            for (Bot<T> bot : tenant.bots.flows.values()) {
                if (bot.entries.removeIf(entry -> filter.test(entry) && waiting.remove(entry)) && bot.entries.isEmpty()) {
                    tenant.bots.leave(bot);
                }
            }
            if (tenant.waiting && tenant.bots.queue.isEmpty()) {
                tenants.leave(tenant);
            }
        }
    }

    /**
     * Forgets tenants and bots that wait for nothing and whose last turn lies in the past of their level's
     * virtual time: they would resume at the present anyway, so keeping them only costs memory.
     */
    public void forgetIdle() {
        tenants.forgetIdle();
        tenants.flows.values().forEach(tenant -> tenant.bots.forgetIdle());
    }

    public boolean contains(T entry) {
        return waiting.contains(entry);
    }

    public int size() {
        return waiting.size();
    }

    public boolean isEmpty() {
        return waiting.isEmpty();
    }

    /** Tenants (waiting or remembered) this scheduler holds state for. */
    int tenantsKnown() {
        return tenants.flows.size();
    }

    private static long cost(int weight) {
        return TURN / Math.max(1, Math.min(MAX_WEIGHT, weight));
    }

    /** Something served in turns: a tenant, or a bot inside one. */
    private static class Flow {
        final long cost;
        long start;
        long finish;
        long ticket;
        boolean waiting;

        Flow(long cost) {
            this.cost = cost;
        }
    }

    private static final class Tenant<T> extends Flow {
        final Level<Bot<T>> bots = new Level<>();

        final String id;

        Tenant(String id, long cost) {
            super(cost);
            this.id = id;
        }
    }

    private static final class Bot<T> extends Flow {
        final ArrayDeque<T> entries = new ArrayDeque<>();

        Bot(long cost) {
            super(cost);
        }
    }

    /** One level of start-time fair queuing: its flows by name, those waiting by start tag, and its virtual time. */
    private static final class Level<F extends Flow> {
        final Map<String, F> flows = new HashMap<>();
        final PriorityQueue<F> queue = new PriorityQueue<>(
                Comparator.<F>comparingLong(f -> f.start).thenComparingLong(f -> f.ticket));
        long virtualTime;
        long tickets;

        /** The flow starts waiting: at the present, or after its last turn if that has not finished yet. */
        void enter(F flow) {
            flow.start = Math.max(virtualTime, flow.finish);
            flow.ticket = tickets++;
            flow.waiting = true;
            queue.add(flow);
        }

        F serve() {
            return serve(flow -> true);
        }

        /**
         * Serves the flow with the smallest start tag that may be served; those passed over go back with their tags.
         * The virtual time never goes back: a flow served late, after others with larger tags, does not pull it back.
         */
        F serve(Predicate<F> mayServe) {
            F flow = queue.poll();
            List<F> passed = null;
            while (flow != null && !mayServe.test(flow)) {
                if (passed == null) {
                    passed = new ArrayList<>();
                }
                passed.add(flow);
                flow = queue.poll();
            }
            if (passed != null) {
                queue.addAll(passed);
            }
            if (flow == null) {
                return null;
            }
            flow.waiting = false;
            virtualTime = Math.max(virtualTime, flow.start);
            flow.finish = flow.start + flow.cost;
            return flow;
        }

        void leave(F flow) {
            queue.remove(flow);
            flow.waiting = false;
        }

        void forgetIdle() {
            flows.values().removeIf(flow -> !flow.waiting && flow.finish <= virtualTime);
        }
    }
}
