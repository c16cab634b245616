package io.clawfleet.worker.turn;

import io.clawfleet.shared.message.InboundMessage;
import io.clawfleet.shared.message.TurnRequest;
import io.clawfleet.shared.store.BotRef;
import io.clawfleet.shared.store.HistoryEntry;
import io.clawfleet.shared.store.WorkspaceFile;
import io.clawfleet.shared.workspace.Skill;
import io.clawfleet.shared.workspace.WorkspacePaths;
import io.clawfleet.worker.llm.ChatMessage;
import io.clawfleet.worker.workspace.WorkspaceCache;
import io.clawfleet.worker.workspace.WorkspaceSnapshot;
import io.vertx.core.Future;

import io.clawfleet.shared.store.BotRef;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * Assembles what the model sees before the new message (seed 000 §5), in this order:
 * <ol>
 *   <li>the bot's system message: IDENTITY.md, AGENTS.md, TOOLS.md, USER.md, the global memory, the
 *       skills index (name and description) and the always-skills' bodies. It is the same for every chat
 *       of the bot until its workspace changes, and it comes first (after the tools, which every provider
 *       puts before the messages) so that the provider's prompt cache serves it: OpenAI caches the
 *       longest prefix it has seen, Anthropic the prefix up to the block this message becomes, which
 *       carries a cache breakpoint;</li>
 *   <li>the chat's system message: the chat's memory and a line saying which chat this is and when;</li>
 *   <li>the conversation summary left by compaction, as a system message of its own;</li>
 *   <li>the last N user and assistant messages not yet compacted.</li>
 * </ol>
 * An isolated run (a scheduled task in context mode isolated) gets the first message without the
 * chat's memory, and neither summary nor history. Lean on purpose: every byte is paid for on every
 * turn, so files are included as they are and skill bodies only when asked for.
 */
public final class ContextBuilder {

    static final String SUMMARY_PREFIX = "[Conversation summary]\n";

    private final WorkspaceCache workspace;
    private final int historyMessages;

    public ContextBuilder(WorkspaceCache workspace, int historyMessages) {
        this.workspace = Objects.requireNonNull(workspace);
        this.historyMessages = historyMessages;
    }

    /** What a turn starts from. */
    public record Context(List<ChatMessage> messages, WorkspaceSnapshot workspace) {
    }

    /**
     * @param history the chat's recent history, oldest first (compacted messages already left out)
     * @param summary the summary of what compaction folded away, or null
     */
    public Future<Context> build(TurnRequest turn, Set<String> disabledSkills, boolean admin, List<HistoryEntry> history,
                                 String summary) {
        InboundMessage message = turn.message();
        boolean isolated = TurnRequest.CONTEXT_ISOLATED.equals(turn.contextMode());
        Future<Optional<WorkspaceFile>> chatMemory = isolated ? Future.succeededFuture(Optional.empty())
                : workspace.file(message.bot(), WorkspacePaths.chatMemory(message.channel(), message.chatKey()));
        return Future.all(workspace.snapshot(message.bot()), chatMemory).map(both -> {
            WorkspaceSnapshot snapshot = both.resultAt(0);
            Optional<WorkspaceFile> memory = both.resultAt(1);
            List<ChatMessage> out = new ArrayList<>(historyMessages + 2);
            out.add(ChatMessage.system(disabledSkills.isEmpty()
                    ? snapshot.derived(new BotText(message.bot()), s -> botSystem(message.bot(), s, Set.of()))
                    : botSystem(message.bot(), snapshot, disabledSkills)));
            out.add(ChatMessage.system(chatSystem(memory.map(WorkspaceFile::content).orElse(""), message, admin, isolated)));
            if (!isolated) {
                if (summary != null && !summary.isBlank()) {
                    out.add(ChatMessage.system(SUMMARY_PREFIX + summary.strip()));
                }
                addHistory(out, history);
            }
            return new Context(out, snapshot);
        });
    }

    /**
     * The key of a bot's text kept with its workspace snapshot: built once per workspace version, not per turn. Only
     * chats that disable no skill share it (nearly all); a chat's own set of disabled skills is built each turn, so
     * the chats of one bot cannot grow the snapshot with a text per set.
     */
    private record BotText(BotRef bot) {
    }

    /**
     * What every chat of the bot is told: the same text until the workspace (or the chat's disabled skills) change.
     * It opens with the bot's cache scope ({@link #cacheScope}).
     */
    static String botSystem(BotRef bot, WorkspaceSnapshot snapshot, Set<String> disabledSkills) {
        StringBuilder out = new StringBuilder(2_048);
        out.append("Cache scope: ").append(cacheScope(bot)).append('.');
        for (String path : List.of(WorkspacePaths.IDENTITY, WorkspacePaths.AGENTS, WorkspacePaths.TOOLS,
                WorkspacePaths.USER, WorkspacePaths.MEMORY)) {
            section(out, snapshot.text(path));
        }
        skills(out, snapshot, disabledSkills);
        return out.toString();
    }

    /**
     * A digest of the bot, first in its text. A provider caches prompt prefixes per account, and the cluster's own
     * provider account serves every tenant: without it, the default workspace's text would be one prefix for all
     * tenants, and a tenant could confirm a guess of another's prompt by the cached tokens its usage shows. The
     * tools, which come before it, are the same built-in definitions for everyone.
     */
    static String cacheScope(BotRef bot) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256")
                    .digest((bot.tenantId() + "\u0000" + bot.botId()).getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 6);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is part of every Java runtime", e);
        }
    }

    /** What only this chat is told, after the bot's part: its memory, which chat it is, its rights and the time. */
    static String chatSystem(String chatMemory, InboundMessage message, boolean admin, boolean isolated) {
        StringBuilder out = new StringBuilder(512);
        if (!chatMemory.isBlank()) {
            section(out, "# Chat memory\n\n" + chatMemory.strip());
        }
        section(out, "Chat: " + message.channel() + ":" + message.chatKey() + " (" + (admin ? "admin" : "normal")
                + (isolated ? ", scheduled run" : "") + ")." + (admin ? "" : " Files this chat may write: its memory ("
                + WorkspacePaths.chatMemory(message.channel(), message.chatKey()) + ") and files under "
                + WorkspacePaths.chatScratch(message.channel(), message.chatKey()) + "/.") + " Now: "
                + Instant.now().truncatedTo(ChronoUnit.MINUTES) + ".");
        return out.toString();
    }

    private static void skills(StringBuilder out, WorkspaceSnapshot snapshot, Set<String> disabledSkills) {
        StringBuilder index = new StringBuilder();
        StringBuilder always = new StringBuilder();
        for (Skill skill : snapshot.skills().values()) {
            if (disabledSkills.contains(skill.name()) || snapshot.unavailable(skill.name()).isPresent()) {
                continue;
            }
            if (skill.always()) {
                always.append("\n\n## Skill: ").append(skill.name()).append("\n\n").append(skill.body().strip());
            } else {
                index.append("\n- ").append(skill.name()).append(": ").append(skill.description());
            }
        }
        if (!index.isEmpty()) {
            section(out, "# Skills (read with skills_read before use)" + index);
        }
        if (!always.isEmpty()) {
            section(out, always.toString().strip());
        }
    }

    private static void section(StringBuilder out, String text) {
        String trimmed = text.strip();
        if (trimmed.isEmpty()) {
            return;
        }
        if (!out.isEmpty()) {
            out.append("\n\n");
        }
        out.append(trimmed);
    }

    private void addHistory(List<ChatMessage> out, List<HistoryEntry> history) {
        List<HistoryEntry> said = history.stream()
                .filter(e -> ("user".equals(e.role()) || "assistant".equals(e.role())) && e.content() != null
                        && !e.content().isBlank())
                .toList();
        for (HistoryEntry entry : said.subList(Math.max(0, said.size() - historyMessages), said.size())) {
            out.add(new ChatMessage(entry.role(), entry.content(), null, null, null));
        }
    }
}
