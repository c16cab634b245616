package io.clawfleet.worker.turn;

/**
 * How many pending messages all chat lanes of a worker may hold in memory together. Past it,
 * messages stay in the inbox (durable) and lanes read them in order when they get to them.
 * Event-loop confined, like the lanes.
 */
public final class QueueBudget {

    private final int capacity;
    private int used;

    public QueueBudget(int capacity) {
        this.capacity = capacity;
    }

    boolean tryAcquire() {
        if (used >= capacity) {
            return false;
        }
        used++;
        return true;
    }

    boolean hasRoom() {
        return used < capacity;
    }

    void release(int count) {
        used = Math.max(0, used - count);
    }

    public int used() {
        return used;
    }
}
