package io.clawfleet.shared.store;

import io.vertx.core.Future;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.Tuple;

import java.util.Objects;

/**
 * Send pacing shared by every gateway: one call reserves a send's slot in its chat's and its account's rate, by the
 * database's clock (the generic cell rate algorithm, in {@code clawfleet_pace}, V40), so a platform's limits hold for
 * the cluster however many gateways send.
 */
public final class SendPacingStore {

    private final Pool pool;

    public SendPacingStore(Pool pool) {
        this.pool = Objects.requireNonNull(pool);
    }

    /**
     * Reserves a send.
     *
     * @param chatPerSecond    the chat's steady rate; {@code chatBurst} sends may go at once
     * @param accountPerSecond the account's steady rate across its chats; {@code accountBurst} at once
     * @return milliseconds to wait before sending; -1 when that would be longer than {@code maxWaitMs} (nothing reserved)
     */
    public Future<Long> reserve(long accountId, String tenantId, String chat, double chatPerSecond, int chatBurst,
                                double accountPerSecond, int accountBurst, long maxWaitMs) {
        return pool.preparedQuery("SELECT clawfleet_pace($1, $2, $3, $4, $5, $6, $7, $8) AS wait")
                .execute(Tuple.of(accountId, tenantId, chat, 1000.0 / chatPerSecond, chatBurst, 1000.0 / accountPerSecond,
                        accountBurst, (double) maxWaitMs))
                .map(rows -> {
                    double wait = rows.iterator().next().getDouble("wait");
                    return wait < 0 ? -1L : (long) Math.ceil(wait);
                });
    }

    /** Forgets chats quiet for 10 minutes (their next send starts a fresh burst, as it would anyway); any gateway may. */
    public Future<Integer> prune() {
        return pool.query("DELETE FROM channel_send_pacing WHERE tat < now() - interval '10 minutes'").execute()
                .map(rows -> rows.rowCount());
    }
}
