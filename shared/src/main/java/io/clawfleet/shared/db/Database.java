package io.clawfleet.shared.db;

import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.net.NetClientOptions;
import io.vertx.pgclient.PgBuilder;
import io.vertx.pgclient.PgConnectOptions;
import io.vertx.sqlclient.Pool;
import io.vertx.sqlclient.PoolOptions;
import io.vertx.sqlclient.SqlConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Objects;
import java.util.concurrent.TimeUnit;

/** The reactive connection pool of a node, and a cheap health probe over it. */
public final class Database {

    private static final Logger LOG = LoggerFactory.getLogger(Database.class);
    /** What every pooled connection runs first ({@link #preferGenericPlans}); plan tests run their statements so too. */
    public static final String GENERIC_PLANS = "SET plan_cache_mode = force_generic_plan";

    private final Pool pool;
    private final DbUrl url;

    /** One connection of its own for what keeps the node alive: lease renewals and the health probe. */
    private final Pool control;

    private Database(Pool pool, Pool control, DbUrl url) {
        this.pool = pool;
        this.control = control;
        this.url = url;
    }

    public static Database connect(Vertx vertx, DbUrl url, int poolSize, long connectTimeoutMs) {
        Objects.requireNonNull(vertx);
        PgConnectOptions connect = connectOptions(url);
        PoolOptions options = new PoolOptions()
                .setMaxSize(poolSize)
                .setShared(false)
                .setMaxWaitQueueSize(10_000)
                .setConnectionTimeout((int) Math.max(1, TimeUnit.MILLISECONDS.toSeconds(connectTimeoutMs)))
                .setConnectionTimeoutUnit(TimeUnit.SECONDS)
                .setIdleTimeout(60)
                .setIdleTimeoutUnit(TimeUnit.SECONDS);
        NetClientOptions net = new NetClientOptions()
                .setConnectTimeout((int) Math.min(Integer.MAX_VALUE, connectTimeoutMs))
                .setTcpNoDelay(true)
                .setTcpKeepAlive(true);
        Pool pool = PgBuilder.pool().with(options).with(net).connectingTo(connect).using(vertx)
                .withConnectHandler(Database::preferGenericPlans).build();
        // Under a burst the main pool's pipelines and wait queue hold thousands of statements; a lease
        // renewal queued behind them timed out, and the worker dropped every partition while the
        // database was fine (the 10,000-in-flight check). Renewals and pings never wait behind work.
        PoolOptions controlOptions = new PoolOptions(options).setMaxSize(1).setMaxWaitQueueSize(64);
        Pool control = PgBuilder.pool().with(controlOptions).with(net).connectingTo(new PgConnectOptions(connect)
                        .setPipeliningLimit(1).addProperty("application_name", "clawfleet-control"))
                .using(vertx).withConnectHandler(Database::preferGenericPlans).build();
        return new Database(pool, control, url);
    }

    /**
     * The connection options a URL asks for, its {@code sslmode} included (see {@link DbSsl}).
     *
     * @throws io.clawfleet.shared.config.ConfigException when the URL names an unknown sslmode
     */
    static PgConnectOptions connectOptions(DbUrl url) {
        PgConnectOptions options = new PgConnectOptions()
                .setHost(url.host())
                .setPort(url.port())
                .setDatabase(url.database())
                .setUser(url.user() == null ? "postgres" : url.user())
                .setPassword(url.password() == null ? "" : url.password())
                .setCachePreparedStatements(true)
                .setPreparedStatementCacheMaxSize(512)
                // The client caches only statements up to this length (default 2,048 chars); the turn
                // commit is longer, and uncached it was parsed and planned again on every turn.
                .setPreparedStatementCacheSqlLimit(16_384)
                // Many small statements from many chats share few connections.
                .setPipeliningLimit(256)
                .setReconnectAttempts(0)
                .addProperty("application_name", "clawfleet");
        try {
            return DbSsl.apply(url, options);
        } catch (IllegalArgumentException e) {
            throw new io.clawfleet.shared.config.ConfigException(java.util.List.of("db.url: " + e.getMessage()));
        }
    }

    /**
     * Every statement of a node is a short lookup or write by key, prepared once per connection.
     * PostgreSQL plans such a statement again on every call when it guesses a custom plan may beat
     * the generic one (the long poll's outbox read and the chat load were planned on every call:
     * 0.17 ms each, a quarter of the database's CPU per message); the generic plan is what they need.
     * A statement's plan is still made again whenever ANALYZE changes what its tables look like. A generic plan
     * does not know which chat it is for, so it must be right for all of them: see V45 (messages.chat_id) and
     * ChatReadPlanTest.
     */
    private static void preferGenericPlans(SqlConnection connection) {
        connection.query(GENERIC_PLANS).execute().onComplete(result -> {
            if (result.failed()) {
                LOG.warn("cannot set plan_cache_mode (PostgreSQL 12 or newer has it), statements keep the default: {}",
                        result.cause().getMessage());
            }
            connection.close();
        });
    }

    public Pool pool() {
        return pool;
    }

    /** The pool of one connection for liveness: lease claims and renewals, the health probe. Nothing slow. */
    public Pool controlPool() {
        return control;
    }

    public DbUrl url() {
        return url;
    }

    /** Succeeds when a round trip to the database works right now. */
    public Future<Void> ping() {
        return control.query("SELECT 1").execute().mapEmpty();
    }

    public Future<Void> close() {
        return Future.join(pool.close(), control.close()).mapEmpty();
    }
}
