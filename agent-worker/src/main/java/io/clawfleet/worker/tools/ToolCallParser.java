package io.clawfleet.worker.tools;

import io.clawfleet.worker.llm.ToolCallRequest;
import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Tool calls from a model that has no native tool calling (seed 001 {@code bc_tool_parser}),
 * tried in order: XML tags ({@code <tool_call>}, {@code <toolcall>}, {@code <invoke>} with
 * {@code <name>} and {@code <args>}), then fenced JSON blocks ({@code {"tool": ..., "args": {...}}}).
 * Only structured delimiters are read, and only known tool names count: arbitrary JSON in free
 * text is never taken for a call.
 */
public final class ToolCallParser {

    private static final Pattern XML = Pattern.compile(
            "<(tool_call|toolcall|invoke)>\\s*<name>\\s*([A-Za-z0-9_\\-]+)\\s*</name>\\s*<args>(.*?)</args>\\s*</\\1>",
            Pattern.DOTALL);
    private static final Pattern FENCED = Pattern.compile("```json\\s*\\n(\\{.*?})\\s*\\n```", Pattern.DOTALL);
    /** How each kind of call begins; a text that may be starting one of these is not streamed yet. */
    private static final List<String> OPENINGS = List.of("<tool_call>", "<toolcall>", "<invoke>", "```json");

    /**
     * The calls a text holds, and where the first of them starts: the text before it is what the
     * model said to the user; the calls and whatever follows them are not.
     */
    public record Found(List<ToolCallRequest> calls, int start) {

        public boolean isEmpty() {
            return calls.isEmpty();
        }
    }

    private ToolCallParser() {
    }

    /** The calls found in {@code text}, or none; ids are deterministic per turn step. */
    public static Found parse(String text, Set<String> knownTools, String idPrefix) {
        if (text == null || text.isBlank()) {
            return new Found(List.of(), 0);
        }
        List<ToolCallRequest> calls = new ArrayList<>();
        int start = -1;
        Matcher xml = XML.matcher(text);
        while (xml.find()) {
            String args = xml.group(3).strip();
            if (knownTools.contains(xml.group(2)) && isObject(args)) {
                start = start < 0 ? xml.start() : start;
                calls.add(new ToolCallRequest(idPrefix + calls.size(), xml.group(2), args));
            }
        }
        if (!calls.isEmpty()) {
            return new Found(calls, start);
        }
        Matcher fenced = FENCED.matcher(text);
        while (fenced.find()) {
            JsonObject block;
            try {
                block = new JsonObject(fenced.group(1));
            } catch (RuntimeException e) {
                continue;
            }
            if (block.getValue("tool") instanceof String tool && knownTools.contains(tool)
                    && block.getValue("args", new JsonObject()) instanceof JsonObject args && block.size() <= 2) {
                start = start < 0 ? fenced.start() : start;
                calls.add(new ToolCallRequest(idPrefix + calls.size(), tool, args.encode()));
            }
        }
        return new Found(calls, Math.max(start, 0));
    }

    /**
     * Where, in a model answer still arriving, a call may be starting: the first {@code <} or
     * backtick from which the text so far could still grow into one of the openings; the length of
     * the text when there is none. Text from there on must not be shown before the answer is
     * complete, or the beginning of a call (its arguments, maybe a secret) would reach the user.
     */
    public static int mayStartCall(CharSequence text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if ((c == '<' || c == '`') && couldOpen(text, i)) {
                return i;
            }
        }
        return text.length();
    }

    private static boolean couldOpen(CharSequence text, int at) {
        int available = text.length() - at;
        for (String opening : OPENINGS) {
            int n = Math.min(available, opening.length());
            if (text.subSequence(at, at + n).toString().equals(opening.substring(0, n))) {
                return true;
            }
        }
        return false;
    }

    private static boolean isObject(String text) {
        try {
            new JsonObject(text);
            return true;
        } catch (RuntimeException e) {
            return false;
        }
    }
}
