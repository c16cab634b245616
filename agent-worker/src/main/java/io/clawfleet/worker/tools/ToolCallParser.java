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

    private ToolCallParser() {
    }

    /** The calls found in {@code text}, or none; ids are deterministic per turn step. */
    public static List<ToolCallRequest> parse(String text, Set<String> knownTools, String idPrefix) {
        if (text == null || text.isBlank()) {
            return List.of();
        }
        List<ToolCallRequest> calls = new ArrayList<>();
        Matcher xml = XML.matcher(text);
        while (xml.find()) {
            String args = xml.group(3).strip();
            if (knownTools.contains(xml.group(2)) && isObject(args)) {
                calls.add(new ToolCallRequest(idPrefix + calls.size(), xml.group(2), args));
            }
        }
        if (!calls.isEmpty()) {
            return calls;
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
                calls.add(new ToolCallRequest(idPrefix + calls.size(), tool, args.encode()));
            }
        }
        return calls;
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
