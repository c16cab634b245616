package io.clawfleet.worker.workspace;

import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.bus.Addresses;
import io.clawfleet.shared.bus.Consumers;
import io.clawfleet.shared.message.WorkspaceChanged;
import io.clawfleet.shared.store.WorkspaceFile;
import io.clawfleet.shared.store.WorkspaceStore;
import io.clawfleet.shared.workspace.WorkspaceEvents;
import io.clawfleet.shared.workspace.WorkspacePaths;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.eventbus.Message;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * What a worker keeps of its tenants' workspaces: the files every prompt needs (identity, policy,
 * user profile, global memory, skills) as one {@link WorkspaceSnapshot} per tenant, and single
 * files such as a chat's memory. A turn that finds its tenant here costs no round trip for them.
 *
 * <p>Any write anywhere publishes a {@link WorkspaceChanged} notice; the cache drops what it names
 * (the whole snapshot when a snapshot file changed), so a change reaches every worker without a
 * restart. Notices are best effort, so entries also expire after a minute. A load that raced with
 * a notice is not kept. Bounded (least recently used entries go first) and event-loop confined.
 */
public final class WorkspaceCache {

    private static final long TTL_NANOS = TimeUnit.MINUTES.toNanos(1);
    /**
     * The root files of every prompt, read in one statement with the skills, and the MCP servers' file
     * (not in the prompt; it says which tools a turn offers), so a change to any of them is in the next turn.
     */
    static final List<String> CONTEXT_FILES = List.of(WorkspacePaths.IDENTITY, WorkspacePaths.AGENTS,
            WorkspacePaths.TOOLS, WorkspacePaths.USER, WorkspacePaths.MEMORY, WorkspacePaths.MCP);

    private record Cached<T>(T value, long loadedAt) {
    }

    private final Vertx vertx;
    private final WorkspaceStore store;
    private final Map<BotRef, Cached<WorkspaceSnapshot>> snapshots;
    private final Map<String, Cached<Optional<WorkspaceFile>>> files;
    /** Bumped by every notice for a bot: a load that started before it is stale. */
    private final Map<BotRef, Long> generations = new HashMap<>();

    public WorkspaceCache(Vertx vertx, WorkspaceStore store, int maxTenants, int maxFiles) {
        this.vertx = Objects.requireNonNull(vertx);
        this.store = Objects.requireNonNull(store);
        this.snapshots = lru(maxTenants);
        this.files = lru(maxFiles);
    }

    private static <K, V> Map<K, V> lru(int max) {
        return new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
                return size() > max;
            }
        };
    }

    public Future<Void> start() {
        return Consumers.register(vertx, Addresses.WORKSPACE_CHANGED,
                (Message<WorkspaceChanged> message) -> invalidate(message.body().bot(), message.body().path())).mapEmpty();
    }

    public WorkspaceStore store() {
        return store;
    }

    /** Drops what a change to {@code path} makes stale. */
    public void invalidate(BotRef bot, String path) {
        generations.merge(bot, 1L, Long::sum);
        files.remove(key(bot, path));
        if (inSnapshot(path)) {
            snapshots.remove(bot);
        }
    }

    static boolean inSnapshot(String path) {
        return CONTEXT_FILES.contains(path) || path.equals(WorkspacePaths.SKILLS_DIR)
                || path.startsWith(WorkspacePaths.SKILLS_DIR + "/");
    }

    /** The bot's prompt files and skills; a bot seen for the first time gets its default files first. */
    public Future<WorkspaceSnapshot> snapshot(BotRef bot) {
        Cached<WorkspaceSnapshot> cached = snapshots.get(bot);
        if (fresh(cached)) {
            return Future.succeededFuture(cached.value());
        }
        long generation = generation(bot);
        return store.seedDefaults(bot)
                .onSuccess(seeded -> seeded.forEach(path -> WorkspaceEvents.publish(vertx.eventBus(), bot, path)))
                .compose(seeded -> Future.all(store.readAll(bot, CONTEXT_FILES),
                        store.list(bot, WorkspacePaths.SKILLS_DIR)))
                .map(both -> {
                    Map<String, WorkspaceFile> root = both.resultAt(0);
                    List<WorkspaceFile> skills = both.resultAt(1);
                    WorkspaceSnapshot snapshot = WorkspaceSnapshot.of(bot.tenantId(), root, skills);
                    if (generation == generation(bot)) {
                        snapshots.put(bot, new Cached<>(snapshot, System.nanoTime()));
                    }
                    return snapshot;
                });
    }

    /** One file, such as a chat's memory; empty when it does not exist. */
    public Future<Optional<WorkspaceFile>> file(BotRef bot, String path) {
        String key = key(bot, path);
        Cached<Optional<WorkspaceFile>> cached = files.get(key);
        if (fresh(cached)) {
            return Future.succeededFuture(cached.value());
        }
        long generation = generation(bot);
        return store.read(bot, path).onSuccess(file -> {
            if (generation == generation(bot)) {
                files.put(key, new Cached<>(file, System.nanoTime()));
            }
        });
    }

    private long generation(BotRef bot) {
        return generations.getOrDefault(bot, 0L);
    }

    private static boolean fresh(Cached<?> cached) {
        return cached != null && System.nanoTime() - cached.loadedAt() < TTL_NANOS;
    }

    private static String key(BotRef bot, String path) {
        return bot.tenantId() + '\u0000' + bot.botId() + '\u0000' + path;
    }
}
