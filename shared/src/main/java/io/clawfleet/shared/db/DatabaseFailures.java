package io.clawfleet.shared.db;

import io.vertx.core.Future;
import io.vertx.core.VertxException;
import io.vertx.pgclient.PgException;
import io.vertx.sqlclient.ClosedConnectionException;

import java.net.ConnectException;

/** Telling a database that went away (a restart, a failover, the network) from a statement that failed. */
public final class DatabaseFailures {

    private DatabaseFailures() {
    }

    /**
     * The pool's failure when no connection came free within its connection timeout ({@code db.connectTimeoutMs}):
     * Vert.x 5 fails the statement with one shared {@link VertxException} of this text, no type of its own
     * ({@code SqlConnectionPool}); {@code DatabaseFailuresTest} holds a real pool to it, so an upgrade that changes it
     * fails there.
     */
    static final String POOL_WAIT_TIMED_OUT = "Timeout waiting for connection";

    /**
     * Whether {@code failure} says the database could not be reached, dropped the connection, or was too busy to give
     * one within the pool's wait: the same work can succeed later. A statement PostgreSQL refused (a constraint, a bad
     * query) is not such a failure, and neither is anything wrapped by another layer that judged it already: the cause
     * chain is followed only through exceptions of the database client and the network.
     */
    public static boolean unreachable(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof ConnectionLost) {
                return true;
            }
            if (t instanceof VertxException && POOL_WAIT_TIMED_OUT.equals(t.getMessage())) {
                // A burst (10,000 new chats at once on a slow host) queued statements past the wait: no fault of the
                // message, which a turn would otherwise have answered with an apology and dead-lettered.
                return true;
            }
            if (t instanceof ClosedConnectionException || t instanceof ConnectException
                    || t instanceof io.netty.channel.ConnectTimeoutException) {
                return true;
            }
            if (t instanceof PgException pg) {
                // 08: connection exceptions; 57P01-57P03: admin or crash shutdown, cannot connect now.
                String state = pg.getSqlState();
                return state != null && (state.startsWith("08") || state.startsWith("57P"));
            }
            String type = t.getClass().getName();
            if (!type.startsWith("io.vertx.") && !type.startsWith("io.netty.") && !type.startsWith("java.")) {
                return false;
            }
        }
        return false;
    }

    /**
     * Marks a failure of the statement's connection (reset or broken under it while PostgreSQL shuts down, say: a raw
     * {@link java.io.IOException} from the client) as the database's, so that {@link #unreachable} knows it; a model
     * or tool call can fail with the same exception, so a store marks what it ran. Other failures pass unchanged.
     */
    public static <T> Future<T> marked(Future<T> statement) {
        return statement.recover(failure -> Future.failedFuture(connectionFailed(failure) ? new ConnectionLost(failure) : failure));
    }

    private static boolean connectionFailed(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof java.io.IOException) {
                return true;
            }
            if (t instanceof PgException) {
                return false;
            }
        }
        return false;
    }

    /** A statement whose connection failed under it; see {@link #marked}. */
    public static final class ConnectionLost extends RuntimeException {
        ConnectionLost(Throwable cause) {
            super("the database connection failed: " + cause.getMessage(), cause, false, false);
        }
    }
}
