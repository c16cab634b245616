package io.clawfleet.gateway.admission;

import io.clawfleet.shared.store.QuotaStore;
import io.vertx.core.Future;
import io.vertx.core.Promise;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/** The gateway's view of tenants' token quotas: one read for many messages, reads that answer at once, failures. */
class TokenQuotasTest {

    private static final Instant NOW = Instant.parse("2026-11-26T10:00:00Z");
    private static final Instant DAY_END = Instant.parse("2026-11-27T00:00:00Z");
    private static final Instant MONTH_END = Instant.parse("2026-12-01T00:00:00Z");
    private final Clock clock = Clock.fixed(NOW, ZoneOffset.UTC);

    @Test
    void aReadThatAnswersAtOnceIsKeptAndAsked() {
        AtomicInteger reads = new AtomicInteger();
        TokenQuotas quotas = new TokenQuotas((tenant, at) -> {
            reads.incrementAndGet();
            return Future.succeededFuture(new QuotaStore.Tokens(100L, null, 150, 0, DAY_END, MONTH_END));
        }, clock);
        Future<QuotaStore.Exceeded> first = quotas.check("t1");
        Future<QuotaStore.Exceeded> second = quotas.check("t1");
        assertThat(first.succeeded()).as(String.valueOf(first.cause())).isTrue();
        assertThat(first.result().limit()).isEqualTo("tokensPerDay");
        assertThat(first.result().resetsAt()).isEqualTo(DAY_END);
        assertThat(second.result()).isEqualTo(first.result());
        assertThat(reads).hasValue(1);
    }

    @Test
    void messagesArrivingWhileATenantIsReadWaitForThatOneRead() {
        List<Promise<QuotaStore.Tokens>> reads = new ArrayList<>();
        TokenQuotas quotas = new TokenQuotas((tenant, at) -> {
            Promise<QuotaStore.Tokens> read = Promise.promise();
            reads.add(read);
            return read.future();
        }, clock);
        List<Future<QuotaStore.Exceeded>> checks = List.of(quotas.check("t1"), quotas.check("t1"), quotas.check("t1"));
        assertThat(reads).hasSize(1);
        reads.getFirst().complete(new QuotaStore.Tokens(null, null, 0, 0, DAY_END, MONTH_END));
        assertThat(checks).allSatisfy(check -> assertThat(check.succeeded() && check.result() == null).isTrue());
    }

    @Test
    void aFailedReadIsNotKeptTheNextMessageReadsAgain() {
        AtomicInteger reads = new AtomicInteger();
        TokenQuotas quotas = new TokenQuotas((tenant, at) -> reads.incrementAndGet() == 1
                ? Future.failedFuture(new IllegalStateException("database down"))
                : Future.succeededFuture(new QuotaStore.Tokens(null, 10L, 0, 10, DAY_END, MONTH_END)), clock);
        assertThat(quotas.check("t1").failed()).isTrue();
        Future<QuotaStore.Exceeded> again = quotas.check("t1");
        assertThat(again.result().limit()).isEqualTo("tokensPerMonth");
        assertThat(again.result().retryAfterSeconds(NOW)).isEqualTo(MONTH_END.getEpochSecond() - NOW.getEpochSecond());
        assertThat(reads).hasValue(2);
    }
}
