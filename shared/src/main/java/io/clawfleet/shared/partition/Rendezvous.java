package io.clawfleet.shared.partition;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Rendezvous (highest random weight) placement of partitions over live worker nodes: each
 * partition goes to the node with the highest hash of (partition, node). Adding or removing a
 * node moves only the partitions that node wins or held, about 1/N of them.
 */
public final class Rendezvous {

    private Rendezvous() {
    }

    public static Optional<String> ownerOf(int partition, Collection<String> nodeIds) {
        String best = null;
        long bestWeight = Long.MIN_VALUE;
        for (String node : nodeIds) {
            long weight = weight(partition, node);
            // Ties (practically impossible) break on the node id so every node decides alike.
            if (best == null || weight > bestWeight || (weight == bestWeight && node.compareTo(best) < 0)) {
                best = node;
                bestWeight = weight;
            }
        }
        return Optional.ofNullable(best);
    }

    /** Desired owner of every partition; empty when there is no node. */
    public static Map<Integer, String> placement(int partitions, Collection<String> nodeIds) {
        Map<Integer, String> result = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            int partition = p;
            ownerOf(p, nodeIds).ifPresent(node -> result.put(partition, node));
        }
        return result;
    }

    static long weight(int partition, String node) {
        return Integer.toUnsignedLong(Murmur3.hash32(node + '\u0000' + partition));
    }
}
