package io.clawfleet.sandbox.mcp;

import io.clawfleet.sandbox.exec.ProcessSandbox;
import io.clawfleet.sandbox.exec.SetupFailure;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.metrics.Metrics;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The warm stdio MCP servers of one sandbox node (issue 16): one long-lived, isolated server per {@link SessionKey}
 * (tenant, bot, server and what defines its process), started by its first call and initialized once, so later
 * calls skip the server's start. Calls to one session take turns; calls to different sessions run in parallel.
 * A session unused for {@code sandbox.mcpSessionIdleMs} is stopped, and one older than
 * {@code sandbox.mcpSessionMaxLifeMs} between two calls; one whose server exited is removed. At most
 * {@code sandbox.mcpMaxSessions} run at once: a new one stops the least recently used idle one, and when all are
 * busy the call is left to run its server on its own ({@code 0} turns warm sessions off).
 *
 * <p>Metrics: {@code clawfleet.sandbox.mcp.sessions} (a gauge) and {@code clawfleet.sandbox.mcp.session.starts}
 * (a counter), tagged by tenant and bot.
 */
public final class WarmSessions {

    /** One session as it is now: its key, its server's process id (-1 before it started), the calls it answered. */
    public record Info(SessionKey key, long pid, long calls, boolean busy) {
    }

    private static final Logger LOG = LoggerFactory.getLogger(WarmSessions.class);
    /** How long stopping the node waits for its sessions' servers to be gone. */
    private static final long STOP_ALL_MS = 5_000;

    private final ProcessSandbox processes;
    private final Metrics metrics;
    private final int max;
    private final long idleNanos;
    private final long maxLifeMs;
    private final long lifeMs;
    private final long tickMs;
    private final AtomicLong starts = new AtomicLong();
    /** The session each key's next call goes to; guarded by this. */
    private final Map<SessionKey, WarmSession> current = new HashMap<>();
    /** Every session holding a server or about to: those in {@link #current} and those past their life with calls left. */
    private final Set<WarmSession> live = new LinkedHashSet<>();
    /** Tenant and bot pairs with a gauge. */
    private final Set<List<String>> gauged = ConcurrentHashMap.newKeySet();
    private Thread reaper;
    private boolean closed;

    public WarmSessions(ProcessSandbox processes, ClawfleetConfig.Sandbox config, Metrics metrics) {
        this.processes = Objects.requireNonNull(processes);
        this.metrics = Objects.requireNonNull(metrics);
        this.max = config.mcpMaxSessions();
        this.idleNanos = TimeUnit.MILLISECONDS.toNanos(config.mcpSessionIdleMs());
        this.maxLifeMs = config.mcpSessionMaxLifeMs();
        // A session past its life serves the calls that reached it before; none of them outlasts sandbox.maxTimeoutMs.
        this.lifeMs = config.mcpSessionMaxLifeMs() + 2 * config.maxTimeoutMs();
        this.tickMs = Math.max(10, Math.min(1_000, Math.min(config.mcpSessionIdleMs(), config.mcpSessionMaxLifeMs()) / 4));
    }

    /**
     * Blocking. One request to the warm session of {@code key}, started first when there is none: a session found
     * dead before the request was sent is replaced, and the request sent to the new one, once.
     *
     * @param spec      how to start the server when the session has none
     * @param timeoutMs the call's limit: its wait for its turn, a start and the exchange together
     * @return the answer; null when warm sessions are off or the node has no room for one (the caller runs the server on its own)
     * @throws SetupFailure when the sandbox could not start the server, or no longer works on this node
     * @throws IllegalArgumentException when the spec is not acceptable (an environment name, say)
     */
    public McpAnswer call(SessionKey key, ProcessSandbox.Spec spec, String method, JsonObject params, long timeoutMs)
            throws SetupFailure, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        for (int attempt = 0; attempt < 2; attempt++) {
            WarmSession session = acquire(key, spec);
            if (session == null) {
                return null;
            }
            try {
                McpAnswer answer = session.call(method, params, deadline, timeoutMs);
                if (answer != null) {
                    return answer;
                }
            } finally {
                release(session);
            }
        }
        return new McpAnswer(null, method, "its session ended twice before this call could be sent to it; it was not sent",
                false, false, -1, "");
    }

    private synchronized WarmSession acquire(SessionKey key, ProcessSandbox.Spec spec) {
        if (max == 0 || closed) {
            return null;
        }
        WarmSession session = current.get(key);
        if (session != null && (session.stopped() || session.ageMs() >= maxLifeMs)) {
            // Gone, or too old: the next call starts afresh; an old one that still has calls stops after the last (release).
            current.remove(key);
            if (session.users == 0) {
                retire(session, WarmSession.Stop.MAX_LIFE);
            }
            session = null;
        }
        if (session == null) {
            if (live.size() >= max && !evictOne()) {
                LOG.debug("mcp sessions full and all busy; this call runs its server on its own [tenant: {}, bot: {}, server: {}, "
                        + "sessions: {}]", key.tenantId(), key.botId(), key.server(), live.size());
                return null;
            }
            session = new WarmSession(key, processes, spec, lifeMs, () -> started(key));
            current.put(key, session);
            live.add(session);
            if (reaper == null) {
                reaper = Thread.ofVirtual().name("mcp-sessions-reaper").start(this::reap);
            }
        }
        session.users++;
        return session;
    }

    private synchronized void release(WarmSession session) {
        session.users--;
        session.lastUsed = System.nanoTime();
        if (closed) {
            // stopAll stops it.
            return;
        }
        boolean retired = current.get(session.key()) != session;
        if (session.stopped() && !retired) {
            current.remove(session.key());
        }
        if (session.users == 0 && (session.stopped() || retired)) {
            retire(session, WarmSession.Stop.MAX_LIFE);
        }
    }

    /** Under the lock: drops the session (no call holds it) and stops it, unless it stopped already, on another thread. */
    private void retire(WarmSession session, WarmSession.Stop why) {
        live.remove(session);
        if (!session.stopped()) {
            Thread.ofVirtual().name("mcp-session-stop").start(() -> session.stop(why));
        }
    }

    /** Under the lock: makes room by stopping the least recently used idle session; false when every one is busy. */
    private boolean evictOne() {
        WarmSession lru = current.values().stream().filter(s -> s.users == 0).min(Comparator.comparingLong(s -> s.lastUsed))
                .orElse(null);
        if (lru == null) {
            return false;
        }
        current.remove(lru.key());
        retire(lru, WarmSession.Stop.EVICTED);
        return true;
    }

    /** Stops the sessions that idled, outlived their life or lost their server, until none is left. */
    private void reap() {
        while (true) {
            try {
                Thread.sleep(tickMs);
            } catch (InterruptedException e) {
                return;
            }
            Map<WarmSession, WarmSession.Stop> ending = new HashMap<>();
            synchronized (this) {
                if (live.isEmpty() || closed) {
                    reaper = null;
                    return;
                }
                long now = System.nanoTime();
                for (WarmSession session : List.copyOf(current.values())) {
                    WarmSession.Stop why = session.users > 0 ? null : session.exited() ? WarmSession.Stop.CRASH
                            : now - session.lastUsed >= idleNanos ? WarmSession.Stop.IDLE
                            : session.ageMs() >= maxLifeMs ? WarmSession.Stop.MAX_LIFE : null;
                    if (why != null) {
                        current.remove(session.key());
                        live.remove(session);
                        ending.put(session, why);
                    }
                }
            }
            ending.forEach(WarmSession::stop);
        }
    }

    private void started(SessionKey key) {
        starts.incrementAndGet();
        metrics.increment("clawfleet.sandbox.mcp.session.starts", "tenant", key.tenantId(), "bot", key.botId());
        // Not under this lock: the registry has locks of its own, and its scrape asks the gauge, which takes this one.
        if (gauged.add(List.of(key.tenantId(), key.botId()))) {
            metrics.gauge("clawfleet.sandbox.mcp.sessions", () -> running(key.tenantId(), key.botId()),
                    "tenant", key.tenantId(), "bot", key.botId());
        }
    }

    private synchronized int running(String tenantId, String botId) {
        return (int) live.stream().filter(s -> s.running() && s.key().tenantId().equals(tenantId) && s.key().botId().equals(botId))
                .count();
    }

    /**
     * Stops every session (the node is stopping), all at once, and returns once their servers are gone (or after a
     * few seconds); later calls run their servers on their own.
     */
    public void stopAll() {
        List<WarmSession> all;
        synchronized (this) {
            closed = true;
            all = new ArrayList<>(live);
            live.clear();
            current.clear();
            if (reaper != null) {
                reaper.interrupt();
            }
        }
        List<Thread> stopping = all.stream()
                .map(session -> Thread.ofVirtual().name("mcp-session-stop").start(() -> session.stop(WarmSession.Stop.NODE_STOP)))
                .toList();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(STOP_ALL_MS);
        try {
            for (Thread thread : stopping) {
                thread.join(java.time.Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Servers started since the node started. */
    public long starts() {
        return starts.get();
    }

    /** Sessions holding a server or about to. */
    public synchronized int size() {
        return live.size();
    }

    /** The sessions as they are now. */
    public synchronized List<Info> sessions() {
        return live.stream().map(s -> new Info(s.key(), s.pid(), s.calls(), s.users > 0)).toList();
    }
}
