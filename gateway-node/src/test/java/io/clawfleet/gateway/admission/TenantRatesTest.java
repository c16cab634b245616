package io.clawfleet.gateway.admission;

import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.store.RateWindowStore;
import io.clawfleet.shared.testing.TestDatabases;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

import java.time.LocalTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static io.clawfleet.shared.testing.Await.result;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A tenant's messagesPerMinute held across gateways (issue 14): two {@link TenantRates}, as two gateways have,
 * lease from one database; together they admit the limit, never more, and refuse the rest with 429 and the
 * RateLimit headers. A key's and a bot's rates are held the same way, each in windows of its own.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TenantRatesTest {

    private static final AtomicInteger TENANTS = new AtomicInteger();

    private Vertx vertx;
    private Database database;

    @BeforeAll
    void start() {
        vertx = Vertx.vertx();
        database = Database.connect(vertx, TestDatabases.freshMigrated(16), 8, 5_000);
    }

    @AfterAll
    void stop() {
        result(database.close());
        result(vertx.close());
    }

    /** The windows are minutes of the database's clock: start a case early in one so it ends in it. */
    @BeforeEach
    void earlyInAMinute() throws InterruptedException {
        int second = LocalTime.now(ZoneOffset.UTC).getSecond();
        if (second > 40) {
            Thread.sleep((61 - second) * 1_000L);
        }
    }

    @Test
    void twoGatewaysTogetherAdmitTheLimitExactlyWhenEachLeaseIsOneToken() {
        String tenant = "rate-" + TENANTS.incrementAndGet();
        List<TenantRates> gateways = List.of(gateway(), gateway());
        int admitted = 0;
        List<ApiException> refused = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            Future<Void> answer = gateways.get(i % 2).admit(tenant, 50);
            result(answer.otherwiseEmpty().recover(e -> Future.succeededFuture()));
            if (answer.succeeded()) {
                admitted++;
            } else {
                refused.add((ApiException) answer.cause());
            }
        }
        assertThat(admitted).isEqualTo(50);
        assertThat(refused).hasSize(50).allSatisfy(e -> {
            assertThat(e.status()).isEqualTo(429);
            assertThat(e.code()).isEqualTo("rate_limit_exceeded");
            assertThat(e.retryAfterSeconds()).isBetween(1L, 60L);
            assertThat(e.headers()).containsEntry("RateLimit-Policy", "\"messages\";q=50;w=60");
            assertThat(e.headers().get("RateLimit")).startsWith("\"messages\";r=0;t=");
        });
    }

    @Test
    void withLargerLeasesTheGatewaysAdmitAtMostTheLimitAndLoseLessThanAChunkEach() {
        String tenant = "rate-" + TENANTS.incrementAndGet();
        List<TenantRates> gateways = List.of(gateway(), gateway(), gateway());
        // concurrent requests on each gateway, as an event loop's would come
        List<Future<Void>> answers = new ArrayList<>();
        for (int i = 0; i < 1_500; i++) {
            answers.add(gateways.get(i % 3).admit(tenant, 1_000));
        }
        result(Future.join(answers).otherwiseEmpty().recover(e -> Future.succeededFuture()));
        long admitted = answers.stream().filter(Future::succeeded).count();
        // chunks of 10 (1 % of 1,000): each gateway may hold fewer than 10 unspent when the others have the rest
        assertThat(admitted).isBetween(1_000L - 3 * 9, 1_000L);
        int granted = result(database.pool().preparedQuery("SELECT sum(granted)::int FROM tenant_rate_windows WHERE tenant_id = $1")
                .execute(io.vertx.sqlclient.Tuple.of(tenant))).iterator().next().getInteger(0);
        assertThat(granted).isEqualTo(1_000);
    }

    @Test
    void aLimitOfZeroRefusesEverything() {
        Future<Void> answer = gateway().admit("rate-" + TENANTS.incrementAndGet(), 0);
        assertThat(answer.failed()).isTrue();
        assertThat(((ApiException) answer.cause()).status()).isEqualTo(429);
    }

    @Test
    void aKeysAndABotsRatesHaveWindowsOfTheirOwnBesideTheTenants() {
        // given a tenant whose key may send 3 a minute and whose bot support 2, on two gateways
        String tenant = "rate-" + TENANTS.incrementAndGet();
        List<TenantRates> gateways = List.of(gateway(), gateway());
        TenantRates.Scope key = TenantRates.Scope.key("k1");
        TenantRates.Scope bot = TenantRates.Scope.bot("support");

        // when each scope is asked for more than its limit, alternately through both gateways
        List<Future<Void>> byKey = new ArrayList<>();
        List<Future<Void>> byBot = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            byKey.add(settled(gateways.get(i % 2).admit(tenant, key, 3)));
            byBot.add(settled(gateways.get(i % 2).admit(tenant, bot, 2)));
        }

        // then each admits its own limit, and the tenant's window is untouched
        assertThat(byKey.stream().filter(Future::succeeded)).hasSize(3);
        assertThat(byBot.stream().filter(Future::succeeded)).hasSize(2);
        assertThat(granted(tenant, "key:k1")).isEqualTo(3);
        assertThat(granted(tenant, "bot:support")).isEqualTo(2);
        assertThat(granted(tenant, "")).isZero();
        assertThat(result(gateway().admit(tenant, 1).map(true))).isTrue();
        assertThat(granted(tenant, "")).isEqualTo(1);
    }

    @Test
    void aRefusalNamesTheScopeWhoseLimitItIs() {
        String tenant = "rate-" + TENANTS.incrementAndGet();
        ApiException byKey = refusal(gateway().admit(tenant, TenantRates.Scope.key("k1"), 0));
        assertThat(byKey.status()).isEqualTo(429);
        assertThat(byKey.code()).isEqualTo("rate_limit_exceeded");
        assertThat(byKey.getMessage()).contains("key 'k1'", "the key's 'messagesPerMinute'");
        assertThat(byKey.headers()).containsEntry("RateLimit-Policy", "\"key-messages\";q=0;w=60");
        assertThat(byKey.headers().get("RateLimit")).startsWith("\"key-messages\";r=0;t=");

        TenantRates rates = gateway();
        assertThat(settled(rates.admit(tenant, TenantRates.Scope.bot("support"), 1)).succeeded()).isTrue();
        ApiException byBot = refusal(settled(rates.admit(tenant, TenantRates.Scope.bot("support"), 1)));
        assertThat(byBot.getMessage()).contains("bot 'support'", "setting 'messagesPerMinute'");
        assertThat(byBot.retryAfterSeconds()).isBetween(1L, 60L);
        assertThat(byBot.headers()).containsEntry("RateLimit-Policy", "\"bot-messages\";q=1;w=60");

        ApiException byTenant = refusal(gateway().admit(tenant, 0));
        assertThat(byTenant.getMessage()).contains("this tenant", "its limit 'messagesPerMinute'");
        assertThat(byTenant.headers()).containsEntry("RateLimit-Policy", "\"messages\";q=0;w=60");
    }

    /** The answer once it is there, failed or not. */
    private static Future<Void> settled(Future<Void> answer) {
        result(answer.otherwiseEmpty().recover(e -> Future.succeededFuture()));
        return answer;
    }

    private static ApiException refusal(Future<Void> answer) {
        assertThat(answer.failed()).as("refused").isTrue();
        return (ApiException) answer.cause();
    }

    private int granted(String tenant, String scope) {
        return result(database.pool().preparedQuery(
                        "SELECT coalesce(sum(granted), 0)::int FROM tenant_rate_windows WHERE tenant_id = $1 AND scope = $2")
                .execute(io.vertx.sqlclient.Tuple.of(tenant, scope))).iterator().next().getInteger(0);
    }

    private TenantRates gateway() {
        return new TenantRates(new RateWindowStore(database.pool()), bot -> Future.succeededFuture(java.util.Set.of("default")));
    }
}
