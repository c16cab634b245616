package io.clawfleet.shared.schedule;

/**
 * The heartbeat of seed 002: a periodic run that reads HEARTBEAT.md, the checklist in the tenant's
 * workspace, and acts on it. A checklist with nothing to do (absent, blank, or only headings,
 * comments and empty checkboxes, as nanobot judges it) does not wake the bot at all.
 */
public final class Heartbeat {

    /** The checklist's path in the workspace. */
    public static final String FILE = "HEARTBEAT.md";
    /** What the bot answers when the checklist needs nothing now. */
    public static final String OK = "HEARTBEAT_OK";

    private Heartbeat() {
    }

    /** Whether the checklist gives the bot nothing to do. */
    public static boolean isEmpty(String checklist) {
        if (checklist == null) {
            return true;
        }
        boolean inComment = false;
        for (String raw : checklist.split("\n", -1)) {
            String line = raw.strip();
            if (inComment) {
                inComment = !line.contains("-->");
                continue;
            }
            if (line.startsWith("<!--")) {
                inComment = !line.contains("-->");
                continue;
            }
            if (!line.isEmpty() && !line.startsWith("#") && !isBareCheckbox(line)) {
                return false;
            }
        }
        return true;
    }

    private static boolean isBareCheckbox(String line) {
        return line.matches("[-*] \\[[ xX]?\\]");
    }

    /**
     * The message a heartbeat puts in the chat: the instruction, the checklist (cut at
     * {@code maxChars}) and the task's own extra instructions, if any.
     */
    public static String prompt(String checklist, String extra, int maxChars) {
        String list = checklist.length() <= maxChars ? checklist
                : checklist.substring(0, maxChars) + "\n[... " + (checklist.length() - maxChars) + " more characters not shown]";
        StringBuilder text = new StringBuilder()
                .append("Heartbeat: time for your periodic check. Below is ").append(FILE)
                .append(", the checklist in your workspace. Act on the items that need doing now. If nothing needs")
                .append(" attention, answer only ").append(OK).append(".\n\n--- ").append(FILE).append(" ---\n")
                .append(list.strip()).append('\n');
        if (extra != null && !extra.isBlank()) {
            text.append("--- also ---\n").append(extra.strip()).append('\n');
        }
        return text.toString();
    }
}
