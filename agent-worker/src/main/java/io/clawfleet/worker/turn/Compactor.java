package io.clawfleet.worker.turn;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.security.SecretScrubber;
import io.clawfleet.shared.store.CompactionStore;
import io.clawfleet.shared.store.CompactionStore.StoredMessage;
import io.clawfleet.shared.store.Fence;
import io.clawfleet.shared.store.TurnCommit;
import io.clawfleet.shared.store.WorkspaceFile;
import io.clawfleet.shared.workspace.WorkspaceEvents;
import io.clawfleet.shared.workspace.WorkspacePaths;
import io.clawfleet.worker.llm.ChatMessage;
import io.clawfleet.worker.llm.LlmRequest;
import io.clawfleet.worker.llm.LlmResponse;
import io.clawfleet.worker.llm.ToolCallRequest;
import io.clawfleet.worker.llm.ToolDefinition;
import io.clawfleet.worker.tools.ToolCallParser;
import io.clawfleet.worker.workspace.WorkspaceAccess;
import io.clawfleet.worker.workspace.WorkspaceCache;
import io.vertx.core.Future;
import io.vertx.core.Vertx;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import io.clawfleet.shared.store.BotRef;

/**
 * Keeps a long chat's prompt bounded (seed 000 §5, seed 001 {@code bc_compactor}) and its lessons
 * kept (seed 002, nanobot's consolidation). When more than {@code threshold} stored messages are not
 * compacted, all but the last {@code keep} are given to the model, which calls {@code save_memory}
 * once: a log entry appended to the history file, the memory file rewritten with what lasts, and a
 * summary that replaces the old one as a system message of every later prompt.
 *
 * <p>Where it writes depends on the tenant's memory scope: {@code chat} (default) keeps a chat's
 * lessons in its own files, so chats of one tenant never read each other's conversations;
 * {@code global} writes memory/MEMORY.md and memory/HISTORY.md, as nanobot does for one user.
 *
 * <p>When the model fails (or answers without the tool), a deterministic trim takes its place: the
 * summary gains one short line per folded message and nothing else is written, so the chat stays
 * bounded whatever the model does. Everything is written in one statement fenced by the
 * partition's epoch and compare-and-set on the chat's consolidation mark: a stale owner, or a
 * second compaction, writes nothing. The memory file is compare-and-set on the version the model
 * was shown, since later turns run beside a compaction: a memory written meanwhile is kept.
 */
public final class Compactor {

    private static final Logger LOG = LoggerFactory.getLogger(Compactor.class);
    /** The model role of upkeep work; without its own providers it is the default role. */
    public static final String MODEL_ROLE = "memory";
    static final String TOOL = "save_memory";
    private static final int MAX_MESSAGE_CHARS = 2_000;
    private static final int MAX_SUMMARY_CHARS = 4_000;
    private static final int MAX_ENTRY_CHARS = 8_000;
    private static final int MAX_MEMORY_CHARS = 32_000;
    private static final int TRIM_LINE_CHARS = 120;

    private static final String INSTRUCTIONS = """
            You fold the older part of a chat into long-term memory. Call save_memory exactly once with:
            - history_entry: a short paragraph of what happened and was decided, starting with the date, for a log.
            - memory_update: the whole new memory: the current memory plus lasting facts from the conversation \
            (names, preferences, decisions, promises), minus what is no longer true. Markdown, concise.
            - summary: the conversation so far in at most 150 words of bullets, the previous summary included.
            Never copy keys, tokens or passwords.""";

    private final Vertx vertx;
    private final AgentLoop.Model model;
    private final CompactionStore store;
    private final WorkspaceCache workspace;
    private final TenantSettings tenants;
    private final SecretScrubber scrubber;
    private final int threshold;
    private final int keep;
    private final long timeoutMs;
    private final Metrics metrics;

    public Compactor(Vertx vertx, AgentLoop.Model model, CompactionStore store, WorkspaceCache workspace,
                     TenantSettings tenants, SecretScrubber scrubber, ClawfleetConfig.Agent config, long timeoutMs,
                     Metrics metrics) {
        this.vertx = Objects.requireNonNull(vertx);
        this.model = Objects.requireNonNull(model);
        this.store = Objects.requireNonNull(store);
        this.workspace = Objects.requireNonNull(workspace);
        this.tenants = Objects.requireNonNull(tenants);
        this.scrubber = Objects.requireNonNull(scrubber);
        this.threshold = config.compactThreshold();
        this.keep = config.compactKeep();
        this.timeoutMs = timeoutMs;
        this.metrics = Objects.requireNonNull(metrics);
    }

    public boolean due(long unconsolidated) {
        return unconsolidated > threshold;
    }

    /** The save_memory tool the model is offered, and only it. */
    static ToolDefinition tool() {
        JsonObject properties = new JsonObject()
                .put("history_entry", new JsonObject().put("type", "string").put("description", "log paragraph"))
                .put("memory_update", new JsonObject().put("type", "string").put("description", "the whole new memory"))
                .put("summary", new JsonObject().put("type", "string").put("description", "the conversation so far"));
        return new ToolDefinition(TOOL, "Save the folded conversation to long-term memory.", new JsonObject()
                .put("type", "object").put("properties", properties)
                .put("required", new JsonArray().add("history_entry").add("memory_update").add("summary")));
    }

    /**
     * Compacts the chat of {@code message} under {@code fence}.
     *
     * @param consolidatedThrough the chat's consolidation mark as loaded
     * @param summary             the chat's summary as loaded
     * @return true when a compaction was written
     */
    public Future<Boolean> compact(Fence fence, InboundMessage message, long consolidatedThrough, String summary) {
        return store.unconsolidated(message.chatId(), consolidatedThrough, threshold * 4 + keep).compose(stored -> {
            if (stored.size() <= keep) {
                return Future.succeededFuture(false);
            }
            List<StoredMessage> fold = stored.subList(0, stored.size() - keep);
            return tenants.settings(message.bot()).compose(settings -> {
                boolean global = ClawfleetConfig.Agent.MEMORY_GLOBAL.equals(settings.memoryScope());
                String memoryPath = global ? WorkspacePaths.MEMORY
                        : WorkspacePaths.chatMemory(message.channel(), message.chatKey());
                String historyPath = global ? WorkspacePaths.HISTORY
                        : WorkspaceAccess.chatHistory(message.channel(), message.chatKey());
                return workspace.file(message.bot(), memoryPath)
                        .compose(memory -> fold(fence, message, consolidatedThrough, summary, fold, memoryPath, historyPath,
                                memory.orElse(null)));
            });
        });
    }

    /** @param memory the memory file as the model is shown it, or null when there is none */
    private Future<Boolean> fold(Fence fence, InboundMessage message, long previousThrough, String summary,
                                 List<StoredMessage> fold, String memoryPath, String historyPath, WorkspaceFile memory) {
        long through = fold.get(fold.size() - 1).id();
        Target target = new Target(fence, message, previousThrough, through, historyPath, memoryPath,
                memory == null ? 0 : memory.version(), memory == null || memory.content().isBlank());
        LlmRequest request = new LlmRequest(null, List.of(ChatMessage.system(INSTRUCTIONS),
                ChatMessage.user(prompt(summary, memory == null ? "" : memory.content(), fold))), List.of(tool()));
        return model.complete(message.bot(), MODEL_ROLE, request, null)
                .timeout(timeoutMs, TimeUnit.MILLISECONDS)
                .map(response -> {
                    List<TurnCommit.Usage> usage = List.of(AgentLoop.usage(response));
                    try {
                        return saved(response, target, usage);
                    } catch (RuntimeException e) {
                        // The model answered but not as asked: its tokens were spent all the same.
                        return trim(target, summary, fold, usage, e);
                    }
                })
                .recover(failure -> Future.succeededFuture(trim(target, summary, fold, List.of(), failure)))
                .compose(compaction -> store.commit(compaction).map(result -> {
                    if (result.applied()) {
                        metrics.increment("clawfleet.compaction.done", "tenant", message.tenantId());
                        if (result.memoryKept()) {
                            LOG.info("memory changed during consolidation, kept as it is [tenant: {}, chat: {}, path: {}]",
                                    message.tenantId(), message.chatKey(), memoryPath);
                            metrics.increment("clawfleet.compaction.memory_kept", "tenant", message.tenantId());
                        }
                        written(message.bot(), compaction, result.memoryKept());
                    }
                    return result.applied();
                }));
    }

    /** Where and over what a compaction writes, as it was when the model was asked. */
    private record Target(Fence fence, InboundMessage message, long previousThrough, long through, String historyPath,
                          String memoryPath, long memoryVersion, boolean memoryEmpty) {
    }

    /** The deterministic fallback, with the tokens the failed attempt spent (none when the call itself failed). */
    private CompactionStore.Compaction trim(Target target, String summary, List<StoredMessage> fold,
                                            List<TurnCommit.Usage> usage, Throwable failure) {
        LOG.warn("memory consolidation by the model failed, trimming instead [tenant: {}, chat: {}]: {}",
                target.message().tenantId(), target.message().chatKey(), scrubber.scrub(String.valueOf(failure.getMessage())));
        metrics.increment("clawfleet.compaction.fallback", "tenant", target.message().tenantId());
        return new CompactionStore.Compaction(target.fence(), target.message().chatId(), target.previousThrough(),
                target.through(), scrubber.scrub(trimmed(summary, fold)), target.historyPath(), null, target.memoryPath(),
                null, target.memoryVersion(), usage);
    }

    /** The model's save_memory call as a compaction; a missing or malformed call fails (and the trim runs). */
    private CompactionStore.Compaction saved(LlmResponse response, Target target, List<TurnCommit.Usage> usage) {
        // A model without native tool calling writes the call in its text, as in a turn (seed 001).
        List<ToolCallRequest> calls = response.toolCalls().isEmpty()
                ? ToolCallParser.parse(response.content(), Set.of(TOOL), "consolidation_").calls() : response.toolCalls();
        ToolCallRequest call = calls.stream().filter(c -> TOOL.equals(c.name())).findFirst()
                .orElseThrow(() -> new IllegalStateException("the model answered without calling " + TOOL));
        JsonObject args = new JsonObject(call.arguments());
        String entry = text(args, "history_entry", MAX_ENTRY_CHARS);
        String summary = text(args, "summary", MAX_SUMMARY_CHARS);
        // Nothing worth remembering yet is a fair answer while the memory is empty (the memory is left as it is);
        // an empty memory_update over a memory that has facts would erase them, so it fails like a malformed call.
        boolean nothingToRemember = target.memoryEmpty() && args.getValue("memory_update") instanceof String update
                && update.isBlank();
        String memory = nothingToRemember ? null : scrubber.scrub(text(args, "memory_update", MAX_MEMORY_CHARS).strip()) + "\n";
        String dated = "## " + Instant.now().truncatedTo(ChronoUnit.MINUTES) + "\n\n" + entry.strip();
        return new CompactionStore.Compaction(target.fence(), target.message().chatId(), target.previousThrough(),
                target.through(), scrubber.scrub(summary.strip()), target.historyPath(), scrubber.scrub(dated),
                target.memoryPath(), memory, target.memoryVersion(), usage);
    }

    private static String text(JsonObject args, String name, int max) {
        if (!(args.getValue(name) instanceof String value) || value.isBlank()) {
            throw new IllegalArgumentException(TOOL + " without " + name);
        }
        if (value.length() > max) {
            throw new IllegalArgumentException(TOOL + "'s " + name + " is longer than " + max + " characters");
        }
        return value;
    }

    static String prompt(String summary, String memory, List<StoredMessage> fold) {
        StringBuilder out = new StringBuilder();
        out.append("## Previous summary\n").append(summary == null || summary.isBlank() ? "(none)" : summary.strip())
                .append("\n\n## Current memory\n").append(memory.isBlank() ? "(empty)" : memory.strip())
                .append("\n\n## Conversation\n");
        for (StoredMessage m : fold) {
            if (m.content() == null || m.content().isBlank() || !("user".equals(m.role()) || "assistant".equals(m.role()))) {
                continue;
            }
            String who = "user".equals(m.role()) ? "USER" + (m.senderId() == null ? "" : " " + m.senderId()) : "ASSISTANT";
            String text = m.content().replace('\n', ' ');
            out.append(who).append(": ").append(text.length() > MAX_MESSAGE_CHARS
                    ? text.substring(0, MAX_MESSAGE_CHARS) + "..." : text).append('\n');
        }
        return out.toString();
    }

    /** The fallback: the old summary plus one short line per folded message, the newest kept when it is too long. */
    static String trimmed(String summary, List<StoredMessage> fold) {
        List<String> lines = new ArrayList<>();
        if (summary != null && !summary.isBlank()) {
            lines.addAll(List.of(summary.strip().split("\n")));
        }
        for (StoredMessage m : fold) {
            if (m.content() != null && !m.content().isBlank() && ("user".equals(m.role()) || "assistant".equals(m.role()))) {
                String text = m.content().strip().replace('\n', ' ');
                lines.add("- " + m.role() + ": " + (text.length() > TRIM_LINE_CHARS ? text.substring(0, TRIM_LINE_CHARS) + "..." : text));
            }
        }
        int size = 0;
        int from = lines.size();
        while (from > 0 && size + lines.get(from - 1).length() + 1 <= MAX_SUMMARY_CHARS) {
            size += lines.get(--from).length() + 1;
        }
        return String.join("\n", lines.subList(from, lines.size()));
    }

    private void written(BotRef bot, CompactionStore.Compaction compaction, boolean memoryKept) {
        for (String path : new String[] {compaction.historyEntry() == null ? null : compaction.historyPath(),
                compaction.memory() == null || memoryKept ? null : compaction.memoryPath()}) {
            if (path != null) {
                workspace.invalidate(bot, path);
                WorkspaceEvents.publish(vertx.eventBus(), bot, path);
            }
        }
    }
}
