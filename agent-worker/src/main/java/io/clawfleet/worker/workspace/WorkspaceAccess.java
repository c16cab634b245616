package io.clawfleet.worker.workspace;

import io.clawfleet.shared.workspace.WorkspacePaths;

import java.util.Optional;

/**
 * Which workspace paths a chat may read and write (seed 000 §12.1–12.2, and privacy between the
 * chats of one tenant). An admin chat may do anything inside the workspace. A normal chat may not
 * write the protected files (IDENTITY.md, TOOLS.md, USER.md, .mcp.json, skills/) nor the global
 * memory; and under memory/ it sees only the global memory and history and its own chat's files,
 * never another chat's memory.
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
        if (WorkspacePaths.isProtected(path)) {
            return Optional.of(path + " is protected: only an admin chat may change it");
        }
        if (path.equalsIgnoreCase(WorkspacePaths.MEMORY) || path.equalsIgnoreCase(WorkspacePaths.HISTORY)) {
            return Optional.of("writing the global memory is only allowed in an admin chat");
        }
        if (path.startsWith(CHAT_HISTORY_DIR + "/") && visible(path, caller)) {
            return Optional.of(path + " is the chat's history log: it is written by memory consolidation only");
        }
        return readRefusal(path, caller);
    }

    /** Whether a normal chat may see {@code path}: anything outside memory/, and its own part of memory/. */
    public static boolean visible(String path, Caller caller) {
        String lower = path.toLowerCase(java.util.Locale.ROOT);
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
