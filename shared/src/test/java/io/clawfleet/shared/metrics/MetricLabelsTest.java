package io.clawfleet.shared.metrics;

import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class MetricLabelsTest {

    @Test
    void tenantsPastTheBoundAreCountedAsOtherAndTheFirstKeepTheirOwn() {
        MetricLabels labels = new MetricLabels(2, 100);
        assertThat(labels.fold("tenant", "acme", "channel", "api")).containsExactly("tenant", "acme", "channel", "api");
        assertThat(labels.fold("tenant", "globex")).containsExactly("tenant", "globex");
        assertThat(labels.fold("tenant", "initech", "channel", "api")).containsExactly("tenant", "_other", "channel", "api");
        assertThat(labels.fold("tenant", "acme")).as("admitted once, kept for good").containsExactly("tenant", "acme");
        assertThat(labels.tenants()).isEqualTo(2);
    }

    @Test
    void botsAreBoundedToAndFoldWithTheirTenant() {
        MetricLabels labels = new MetricLabels(1, 2);
        assertThat(labels.fold("tenant", "acme", "bot", "b1")).containsExactly("tenant", "acme", "bot", "b1");
        assertThat(labels.fold("tenant", "acme", "bot", "b2")).containsExactly("tenant", "acme", "bot", "b2");
        assertThat(labels.fold("tenant", "acme", "bot", "b3")).containsExactly("tenant", "acme", "bot", "_other");
        assertThat(labels.fold("tenant", "globex", "bot", "b1"))
                .as("another tenant's bot of the same id is another bot, and its tenant is over the bound")
                .containsExactly("tenant", "_other", "bot", "_other");
    }

    @Test
    void tagsWithoutTenantOrBotAndEmptyTenantsAreLeftAlone() {
        MetricLabels labels = new MetricLabels(1, 1);
        String[] tags = {"tool", "shell_exec", "outcome", "ok"};
        assertThat(labels.fold(tags)).isSameAs(tags);
        assertThat(labels.fold("table", "audit", "tenant", "")).containsExactly("table", "audit", "tenant", "");
        assertThat(labels.fold("tenant", "acme")).containsExactly("tenant", "acme");
    }

    @Test
    void theBoundHoldsUnderConcurrentFirstSightings() throws InterruptedException {
        MetricLabels labels = new MetricLabels(50, 50);
        AtomicInteger own = new AtomicInteger();
        Thread[] threads = new Thread[8];
        for (int t = 0; t < threads.length; t++) {
            int offset = t;
            threads[t] = Thread.ofPlatform().start(() -> {
                for (int i = 0; i < 200; i++) {
                    if (!labels.fold("tenant", "t" + (i * 8 + offset))[1].equals(MetricLabels.OTHER)) {
                        own.incrementAndGet();
                    }
                }
            });
        }
        for (Thread thread : threads) {
            thread.join();
        }
        assertThat(labels.tenants()).isEqualTo(50);
        assertThat(own.get()).isEqualTo(50);
    }

    @Test
    void providerModelAndRoleNamesKeepTheirFirstFifty() {
        MetricLabels labels = new MetricLabels(1, 1);
        for (int i = 0; i < MetricLabels.MAX_NAMED; i++) {
            assertThat(labels.fold("role", "default", "provider", "p" + i, "model", "m" + i))
                    .containsExactly("role", "default", "provider", "p" + i, "model", "m" + i);
        }
        assertThat(labels.fold("role", "default", "provider", "p-late", "model", "m0", "outcome", "ok"))
                .containsExactly("role", "default", "provider", "_other", "model", "m0", "outcome", "ok");
        String[] tags = {"provider", "p1", "tenant", "acme"};
        assertThat(labels.fold(tags)).isSameAs(tags);
        assertThat(labels.fold("provider", "p-late", "tenant", "globex")).containsExactly("provider", "_other", "tenant", "_other");
        assertThat(tags).as("the caller's tags are never changed").containsExactly("provider", "p1", "tenant", "acme");
    }

    @Test
    void aBoundBelowOneIsRefused() {
        assertThatThrownBy(() -> new MetricLabels(0, 10)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aNodesSeriesStayBoundedAndGaugesOfFoldedTenantsAddUp() {
        MicrometerMetrics metrics = new MicrometerMetrics("n1", new MetricLabels(2, 10));
        for (int i = 0; i < 500; i++) {
            metrics.increment("clawfleet.ingest.accepted", "tenant", "t" + i, "bot", "b", "channel", "api");
            metrics.recordMillis("clawfleet.turn.duration", 3, "tenant", "t" + i);
        }
        metrics.gauge("clawfleet.sandbox.mcp.sessions", () -> 2, "tenant", "t0", "bot", "b");
        metrics.gauge("clawfleet.sandbox.mcp.sessions", () -> 3, "tenant", "t7", "bot", "b");
        metrics.gauge("clawfleet.sandbox.mcp.sessions", () -> 4, "tenant", "t8", "bot", "b");
        String scrape = metrics.scrape();
        assertThat(scrape.lines().filter(l -> l.startsWith("clawfleet_ingest_accepted_total{"))).hasSize(3);
        assertThat(scrape).contains("clawfleet_ingest_accepted_total{bot=\"_other\",channel=\"api\",node=\"n1\",tenant=\"_other\"} 498.0")
                .contains("clawfleet_ingest_accepted_total{bot=\"b\",channel=\"api\",node=\"n1\",tenant=\"t1\"} 1.0")
                .contains("clawfleet_sandbox_mcp_sessions{bot=\"b\",node=\"n1\",tenant=\"t0\"} 2.0")
                .contains("clawfleet_sandbox_mcp_sessions{bot=\"_other\",node=\"n1\",tenant=\"_other\"} 7.0");
        assertThat(scrape.lines().filter(l -> l.startsWith("clawfleet_turn_duration_seconds_count{"))).hasSize(3);
    }
}
