package io.clawfleet.shared.workspace;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.text.Normalizer;
import java.util.HexFormat;
import java.util.Objects;

/** Paths inside a tenant's workspace: the one canonical form, the well-known files, each chat's own memory and scratch. */
public final class WorkspacePaths {

    /** Who the bot is. */
    public static final String IDENTITY = "IDENTITY.md";
    /** What the bot knows about its user(s). */
    public static final String USER = "USER.md";
    /** How the bot should use its tools. */
    public static final String TOOLS = "TOOLS.md";
    /** How the bot should work: its standing instructions. */
    public static final String AGENTS = "AGENTS.md";
    /** Long-term facts shared by every chat of the tenant. */
    public static final String MEMORY = "memory/MEMORY.md";
    /** Append-only log of what happened. */
    public static final String HISTORY = "memory/HISTORY.md";
    /** MCP server definitions. */
    public static final String MCP = ".mcp.json";
    /** The folder of the chats' scratch areas; a chat's own is {@link #chatScratch}. */
    public static final String SCRATCH_DIR = "scratch";
    /** The folder of skills; a skill is {@code skills/<name>/SKILL.md}. */
    public static final String SKILLS_DIR = "skills";
    public static final String SKILL_FILE = "SKILL.md";

    public static final int MAX_LENGTH = 512;
    public static final int MAX_DEPTH = 10;

    // A chat's memory file name keeps the chat key readable but must stay a single, short segment.
    private static final int MAX_CHAT_PART = 100;

    private WorkspacePaths() {
    }

    /**
     * The canonical form of a workspace path: relative, '/'-separated, NFC, no "." segments.
     *
     * @throws IllegalArgumentException naming the problem when the path is not a valid workspace file path
     */
    public static String normalize(String path) {
        if (path == null || path.isEmpty()) {
            throw new IllegalArgumentException("the path is empty; give a relative path like 'memory/notes.md'");
        }
        if (path.length() > MAX_LENGTH) {
            throw new IllegalArgumentException("the path is longer than " + MAX_LENGTH + " characters");
        }
        checkCharacters(path);
        if (path.startsWith("/")) {
            throw new IllegalArgumentException("the path '" + path + "' is absolute; give it relative to the workspace, like 'memory/notes.md'");
        }
        String nfc = Normalizer.normalize(path, Normalizer.Form.NFC);
        String[] segments = nfc.split("/", -1);
        StringBuilder out = new StringBuilder(nfc.length());
        int depth = 0;
        for (String segment : segments) {
            if (segment.isEmpty()) {
                throw new IllegalArgumentException("the path '" + path + "' has an empty segment ('//' or a trailing '/'); name a file");
            }
            if (segment.equals("..")) {
                throw new IllegalArgumentException("the path '" + path + "' contains '..'; a workspace path cannot refer to a parent folder");
            }
            if (segment.equals(".")) {
                continue;
            }
            if (!segment.strip().equals(segment)) {
                throw new IllegalArgumentException("the path '" + path + "' has a segment that starts or ends with a space");
            }
            if (++depth > MAX_DEPTH) {
                throw new IllegalArgumentException("the path '" + path + "' is deeper than " + MAX_DEPTH + " levels");
            }
            if (!out.isEmpty()) {
                out.append('/');
            }
            out.append(segment);
        }
        if (out.isEmpty()) {
            throw new IllegalArgumentException("the path '" + path + "' names the workspace itself, not a file");
        }
        if (out.length() > MAX_LENGTH) {
            throw new IllegalArgumentException("the path is longer than " + MAX_LENGTH + " characters");
        }
        return out.toString();
    }

    private static void checkCharacters(String path) {
        for (int i = 0; i < path.length(); i++) {
            char c = path.charAt(i);
            if (c == '\\') {
                throw new IllegalArgumentException("the path '" + printable(path) + "' contains a backslash; separate folders with '/'");
            }
            if (c == 0) {
                throw new IllegalArgumentException("the path contains a NUL character");
            }
            if (Character.isISOControl(c) || c == '\u2028' || c == '\u2029') {
                throw new IllegalArgumentException("the path '" + printable(path) + "' contains a control character (U+"
                        + HexFormat.of().withUpperCase().toHexDigits(c) + ")");
            }
            // Bidirectional overrides make a name display as something it is not.
            if ((c >= '\u202A' && c <= '\u202E') || (c >= '\u2066' && c <= '\u2069')) {
                throw new IllegalArgumentException("the path contains a bidirectional control character (U+"
                        + HexFormat.of().withUpperCase().toHexDigits(c) + ")");
            }
            if (Character.isHighSurrogate(c) && i + 1 < path.length() && Character.isLowSurrogate(path.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException("the path contains an unpaired surrogate (not valid Unicode text)");
            }
        }
    }

    private static String printable(String path) {
        StringBuilder out = new StringBuilder(path.length());
        path.codePoints().forEach(cp -> {
            if (Character.isISOControl(cp) || Character.isSurrogate((char) cp)) {
                out.append("\\u").append(HexFormat.of().withUpperCase().toHexDigits((char) cp));
            } else {
                out.appendCodePoint(cp);
            }
        });
        return out.toString();
    }

    /** Whether the path is a skill definition, {@code skills/<name>/SKILL.md}. */
    public static boolean isSkillFile(String normalizedPath) {
        String[] segments = normalizedPath.split("/");
        return segments.length == 3 && segments[0].equals(SKILLS_DIR) && segments[2].equals(SKILL_FILE);
    }

    /** The definition file of the named skill. */
    public static String skill(String name) {
        return normalize(SKILLS_DIR + "/" + Objects.requireNonNull(name, "name") + "/" + SKILL_FILE);
    }

    /**
     * The memory file of one chat, {@code memory/<channel>_<chatKey>.md}. Characters other than
     * letters, digits, '.', '-' and '_' become '_'; when anything was replaced or cut, a short hash of
     * the original is appended, so two chats never share a file ("a@b" and "a_b" stay apart).
     */
    public static String chatMemory(String channel, String chatKey) {
        return "memory/" + chatPart(channel, chatKey) + ".md";
    }

    /**
     * The folder where one chat keeps working files, {@code scratch/<channel>_<chatKey>} (named like its
     * memory file): with its memory, the only place a normal chat may write.
     */
    public static String chatScratch(String channel, String chatKey) {
        return SCRATCH_DIR + "/" + chatPart(channel, chatKey);
    }

    private static String chatPart(String channel, String chatKey) {
        if (channel == null || channel.isEmpty() || chatKey == null || chatKey.isEmpty()) {
            throw new IllegalArgumentException("a chat's memory or scratch path needs a channel and a chat key");
        }
        String original = channel + "_" + chatKey;
        String safe = safe(channel) + "_" + safe(chatKey);
        boolean changed = !safe.equals(original);
        if (safe.length() > MAX_CHAT_PART) {
            safe = safe.substring(0, MAX_CHAT_PART);
            changed = true;
        }
        if (changed) {
            safe = safe + "-" + shortHash(original);
        }
        return safe;
    }

    private static String safe(String part) {
        StringBuilder out = new StringBuilder(part.length());
        for (int i = 0; i < part.length(); i++) {
            char c = part.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '.' || c == '-' || c == '_';
            out.append(ok ? c : '_');
        }
        return out.toString();
    }

    private static String shortHash(String text) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(digest, 0, 4);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JDK", e);
        }
    }
}
