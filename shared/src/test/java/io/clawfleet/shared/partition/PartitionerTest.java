package io.clawfleet.shared.partition;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PartitionerTest {

    @Test
    void partitionIsStableAcrossReleases() {
        // given a fixed key / when partitioned / then the value never changes (gateways must agree forever)
        Partitioner partitioner = new Partitioner(128);
        assertThat(partitioner.partitionOf("default", "api", "chat-1")).isEqualTo(partitioner.partitionOf("default", "api", "chat-1"));
        assertThat(partitioner.partitionOf("default", "api", "chat-1"))
                .isEqualTo(Math.floorMod(Murmur3.hash32("default\u0000api\u0000chat-1"), 128));
    }

    @Test
    void partsAreSeparatedSoConcatenationsDoNotCollide() {
        Partitioner partitioner = new Partitioner(65_536);
        assertThat(partitioner.partitionOf("a", "bc", "d")).isNotEqualTo(partitioner.partitionOf("ab", "c", "d"));
    }

    @Test
    void spreadsChatsEvenlyOverPartitions() {
        // given 128 partitions and 128,000 chats / when partitioned / then every partition gets within 20% of 1000
        Partitioner partitioner = new Partitioner(128);
        int[] counts = new int[128];
        for (int i = 0; i < 128_000; i++) {
            counts[partitioner.partitionOf("tenant-" + (i % 7), "api", "chat-" + i)]++;
        }
        for (int count : counts) {
            assertThat(count).isBetween(800, 1200);
        }
    }

    @Test
    void rejectsNonPositivePartitionCount() {
        assertThatThrownBy(() -> new Partitioner(0)).hasMessageContaining("at least 1");
    }
}
