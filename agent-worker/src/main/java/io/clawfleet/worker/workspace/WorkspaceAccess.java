package io.clawfleet.worker.workspace;

import io.clawfleet.shared.workspace.WorkspacePaths;

import java.util.Optional;

/**
 * Which workspace paths a chat may read and write (seed 000 §12.1–12.2, and privacy between the
 * chats of one tenant). An admin chat may do anything inside the workspace.
 *
 * <p>A normal chat writes by allow-list, not deny-list: its own memory file
 * ({@link WorkspacePaths#chatMemory}) and files under its own scratch folder
 * ({@link WorkspacePaths#chatScratch}), nothing else. Everything that reaches a prompt or steers the bot
 * (SOUL.md, AGENTS.md, IDENTITY.md, HEARTBEAT.md, TOOLS.md, USER.md, skills, .mcp.json, the global memory)
 * and any file added later is thereby out of a chat user's reach: a Telegram chat is open to anyone.
 * A normal chat reads everything outside memory/ and scratch/, and there only its own part.
 */
public final class WorkspaceAccess {

    /** Folder of the per-chat consolidation logs, {@code memory/history/<channel>_<chat>.md}. */
    public static final String CHAT_HISTORY_DIR = "memory/history";

    private WorkspaceAccess() {
    }

    /** The calling chat, as far as file access is concerned. */
    public record Caller(String channel, String chatKey, boolean admin) {
    }

    /** The consolidation log of one chat (its memory file is {@link WorkspacePaths#chatMemory}). */
    public static String chatHistory(String channel, String chatKey) {
        return CHAT_HISTORY_DIR + "/" + WorkspacePaths.chatMemory(channel, chatKey).substring("memory/".length());
    }

    /** Why the caller may not read {@code path} (normalized), if it may not. */
    public static Optional<String> readRefusal(String path, Caller caller) {
        if (caller.admin() || visible(path, caller)) {
            return Optional.empty();
        }
        return Optional.of(path + " belongs to another chat: only an admin chat may read it");
    }

    /** Why the caller may not write {@code path} (normalized), if it may not. */
    public static Optional<String> writeRefusal(String path, Caller caller) {
        if (caller.admin()) {
            return Optional.empty();
        }
        String memory = WorkspacePaths.chatMemory(caller.channel(), caller.chatKey());
        String scratch = WorkspacePaths.chatScratch(caller.channel(), caller.chatKey());
        if (path.equals(memory) || path.startsWith(scratch + "/")) {
            return Optional.empty();
        }
        if (path.equals(chatHistory(caller.channel(), caller.chatKey()))) {
            return Optional.of(path + " is the chat's history log: it is written by memory consolidation only");
        }
        return Optional.of(path + " can only be changed from an admin chat; this chat may write its own memory ("
                + memory + ") and files under " + scratch + "/");
    }

    /** Whether {@code path} (normalized) is the chat's own: its memory file or a file under its scratch folder. */
    public static boolean ownArea(String path, Caller caller) {
        return path.equals(WorkspacePaths.chatMemory(caller.channel(), caller.chatKey()))
                || path.startsWith(WorkspacePaths.chatScratch(caller.channel(), caller.chatKey()) + "/");
    }

    /** Whether a normal chat may see {@code path}: anything outside memory/ and scratch/, and its own part of those. */
    public static boolean visible(String path, Caller caller) {
        String lower = path.toLowerCase(java.util.Locale.ROOT);
        if (lower.equals(WorkspacePaths.SCRATCH_DIR) || lower.startsWith(WorkspacePaths.SCRATCH_DIR + "/")) {
            String own = WorkspacePaths.chatScratch(caller.channel(), caller.chatKey());
            return lower.equals(WorkspacePaths.SCRATCH_DIR) || path.equals(own) || path.startsWith(own + "/");
        }
        if (!lower.equals("memory") && !lower.startsWith("memory/")) {
            return true;
        }
        return lower.equals("memory") || lower.equals(CHAT_HISTORY_DIR)
                || lower.equals(WorkspacePaths.MEMORY.toLowerCase(java.util.Locale.ROOT))
                || lower.equals(WorkspacePaths.HISTORY.toLowerCase(java.util.Locale.ROOT))
                || path.equals(WorkspacePaths.chatMemory(caller.channel(), caller.chatKey()))
                || path.equals(chatHistory(caller.channel(), caller.chatKey()));
    }
}
