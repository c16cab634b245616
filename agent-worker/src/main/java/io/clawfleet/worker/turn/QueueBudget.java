package io.clawfleet.worker.turn;

import java.util.HashMap;
import java.util.Map;

/**
 * How many pending messages all chat lanes of a worker may hold in memory together, and how much of
 * that one tenant may hold. Past either, messages stay in the inbox (durable) and lanes read them in
 * order when they get to them.
 *
 * <p>The tenant rule: a tenant may take one more place only while it holds fewer than the places left
 * free. A tenant alone can so fill half of the budget; n tenants flooding at once get about 1/(n+1) each;
 * and whatever the others hold, a tenant holding nothing always finds room while any is left. So a tenant
 * flooding the worker cannot keep another tenant's messages out of memory (and so out of the turn
 * scheduler, {@link FairShare}), and no bookkeeping of who is waiting is needed. Event-loop confined,
 * like the lanes.
 */
public final class QueueBudget {

    private final int capacity;
    private final Map<String, Integer> byTenant = new HashMap<>();
    private int used;

    public QueueBudget(int capacity) {
        this.capacity = capacity;
    }

    /** Takes one place for a message of {@code tenant}, if the budget and the tenant rule allow it. */
    boolean tryAcquire(String tenant) {
        if (!hasRoom(tenant)) {
            return false;
        }
        used++;
        byTenant.merge(tenant, 1, Integer::sum);
        return true;
    }

    /** Whether {@code tenant} may take one more place now. */
    boolean hasRoom(String tenant) {
        int free = capacity - used;
        return free > 0 && held(tenant) < free;
    }

    void release(String tenant, int count) {
        if (count <= 0) {
            return;
        }
        int held = held(tenant);
        int released = Math.min(held, count);
        used -= released;
        if (held == released) {
            byTenant.remove(tenant);
        } else {
            byTenant.put(tenant, held - released);
        }
    }

    /** Places held by one tenant. */
    int held(String tenant) {
        return byTenant.getOrDefault(tenant, 0);
    }

    public int used() {
        return used;
    }
}
