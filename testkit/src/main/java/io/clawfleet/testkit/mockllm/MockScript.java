package io.clawfleet.testkit.mockllm;

import io.vertx.core.json.JsonObject;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** What the mock model does with a user message: echo it, call tools, or fail. Same for every API face. */
final class MockScript {

    private static final Pattern CALL = Pattern.compile("call:([A-Za-z0-9_\\-]+)\\s+(?=\\{)");
    private static final Pattern FAIL = Pattern.compile("fail:(\\d{3})");

    /** The mock's decision. */
    sealed interface Reply permits Text, Calls, Fail {
    }

    /** A text answer. */
    record Text(String text) implements Reply {
    }

    /** One scripted call; {@code arguments} is the JSON object text exactly as the user wrote it. */
    record Call(String name, String arguments) {
    }

    record Calls(List<Call> calls) implements Reply {
    }

    record Fail(int status) implements Reply {
    }

    private MockScript() {
    }

    /** Separates the rounds of a multi-step script: the calls after the n-th {@code then:} come in round n. */
    static final String THEN = "then:";
    /** Calls after {@code repeat:} come in every round, for ever (to hit an iteration cap). */
    static final String REPEAT = "repeat:";
    /** The memory consolidation tool; a request offering only it gets a scripted consolidation. */
    static final String SAVE_MEMORY = "save_memory";
    /**
     * Plays a model without native tool calling: scripted calls are written in the text as
     * {@code <tool_call>} tags (seed 001), and a request carrying {@code role: tool} messages or
     * {@code tool_calls} is refused, as such servers do.
     */
    static final String TEXT_TOOLS = "text-tools";
    /** As {@link #TEXT_TOOLS}, with the calls in fenced JSON blocks instead of tags. */
    static final String TEXT_TOOLS_FENCED = "text-tools:fenced";
    /** What a model without native tools says before its calls (kept in the reply like any text). */
    static final String TEXT_TOOLS_PREAMBLE = "I will use a tool.\n";
    private static final Pattern TOOL_RESULT = Pattern.compile(
            "<tool_result name=\"([^\"]*)\">\n(.*?)\n</tool_result>", Pattern.DOTALL);

    /**
     * Tool calls are scripted only when the request offers tools, as a real model would.
     *
     * @param rounds tool rounds already done since the user's message (0 for a fresh message)
     * @param toolResults what the last round's tools said ("" when none ran)
     */
    static Reply decide(String text, boolean toolsOffered, List<String> toolNames, int rounds, String toolResults) {
        Matcher fail = FAIL.matcher(text);
        if (fail.find()) {
            return new Fail(Integer.parseInt(fail.group(1)));
        }
        if (toolNames.equals(List.of(SAVE_MEMORY))) {
            if (text.contains("fail-consolidation")) {
                return new Fail(500);
            }
            // A model that answers, and spends tokens, but does not call the tool.
            return text.contains("skip-consolidation") ? new Text("I would rather not.") : new Calls(List.of(consolidation(text)));
        }
        if (toolsOffered) {
            List<Call> calls = calls(round(text, rounds));
            if (!calls.isEmpty()) {
                return new Calls(calls);
            }
        }
        return rounds > 0 ? new Text(toolResults) : new Text("echo: " + text);
    }

    /** Compatible form for a fresh message. */
    static Reply decide(String text, boolean toolsOffered) {
        return decide(text, toolsOffered, List.of(), 0, "");
    }

    /** The part of a script for one round: before the first "then:" for round 0, and so on. */
    private static String round(String text, int rounds) {
        int repeat = text.indexOf(REPEAT);
        if (repeat >= 0) {
            return text.substring(repeat + REPEAT.length());
        }
        String[] parts = text.split(java.util.regex.Pattern.quote(THEN), -1);
        return rounds < parts.length ? parts[rounds] : "";
    }

    /**
     * A consolidation the way a model would do it, deterministic: every user line that says
     * "remember X" adds "- X" to the memory; the history entry and summary name what was folded.
     */
    private static Call consolidation(String prompt) {
        String memory = section(prompt, "## Current memory", "## ");
        String conversation = section(prompt, "## Conversation", null);
        StringBuilder updated = new StringBuilder(memory.strip().equals("(empty)") ? "" : memory.strip());
        List<String> users = new ArrayList<>();
        for (String line : conversation.split("\n")) {
            if (!line.startsWith("USER")) {
                continue;
            }
            String said = line.substring(line.indexOf(':') + 1).strip();
            users.add(said);
            int at = said.toLowerCase(java.util.Locale.ROOT).indexOf("remember ");
            if (at >= 0) {
                updated.append(updated.isEmpty() ? "" : "\n").append("- ").append(said.substring(at + "remember ".length()).strip());
            }
        }
        String joined = String.join("; ", users);
        JsonObject args = new JsonObject()
                .put("history_entry", "[mock] " + users.size() + " user messages: " + cut(joined, 200))
                .put("memory_update", updated.toString())
                .put("summary", "Earlier the user said: " + cut(joined, 300));
        return new Call(SAVE_MEMORY, args.encode());
    }

    private static String section(String text, String heading, String nextHeading) {
        int start = text.indexOf(heading);
        if (start < 0) {
            return "";
        }
        int from = text.indexOf('\n', start);
        if (from < 0) {
            return "";
        }
        int end = nextHeading == null ? -1 : text.indexOf("\n" + nextHeading, from);
        return text.substring(from + 1, end < 0 ? text.length() : end);
    }

    private static String cut(String text, int max) {
        return text.length() <= max ? text : text.substring(0, max) + "...";
    }

    /** Every {@code call:<tool> {json}} in the text, in order; a call whose object does not close is ignored. */
    static List<Call> calls(String text) {
        List<Call> calls = new ArrayList<>();
        Matcher matcher = CALL.matcher(text);
        int from = 0;
        while (from < text.length() && matcher.find(from)) {
            int end = objectEnd(text, matcher.end());
            if (end < 0) {
                break;
            }
            calls.add(new Call(matcher.group(1), text.substring(matcher.end(), end)));
            from = end;
        }
        return calls;
    }

    /** Parses scripted arguments; text that is not a JSON object becomes {@code {"raw": text}}. */
    static JsonObject argumentsObject(String arguments) {
        try {
            return new JsonObject(arguments);
        } catch (RuntimeException e) {
            return new JsonObject().put("raw", arguments);
        }
    }

    /** Index just past the JSON object starting at {@code start}, honouring strings; -1 when it never closes. */
    private static int objectEnd(String text, int start) {
        int depth = 0;
        boolean inString = false;
        for (int i = start; i < text.length(); i++) {
            char c = text.charAt(i);
            if (inString) {
                if (c == '\\') {
                    i++;
                } else if (c == '"') {
                    inString = false;
                }
            } else if (c == '"') {
                inString = true;
            } else if (c == '{') {
                depth++;
            } else if (c == '}' && --depth == 0) {
                return i + 1;
            }
        }
        return -1;
    }

    /** The calls written the way a model without native tool calling writes them. */
    static String asText(List<Call> calls, boolean fenced) {
        StringBuilder out = new StringBuilder(TEXT_TOOLS_PREAMBLE);
        for (Call call : calls) {
            if (fenced) {
                out.append("```json\n").append(new JsonObject().put("tool", call.name())
                        .put("args", argumentsObject(call.arguments())).encode()).append("\n```\n");
            } else {
                out.append("<tool_call><name>").append(call.name()).append("</name><args>").append(call.arguments())
                        .append("</args></tool_call>\n");
            }
        }
        return out.toString();
    }

    /** Whether a user message is tool results sent back as text (to a model without native tools). */
    static boolean isToolResults(String text) {
        return text.startsWith("<tool_result ");
    }

    /** Tool results sent back as text, one {@code tool <name> said: <result>} line each. */
    static String toolResultsOf(String text) {
        List<String> lines = new ArrayList<>();
        Matcher matcher = TOOL_RESULT.matcher(text);
        while (matcher.find()) {
            lines.add("tool " + matcher.group(1) + " said: " + matcher.group(2));
        }
        return String.join("\n", lines);
    }

    /** Splits text into pieces of at most {@code size} characters, the way streamed arguments arrive. */
    static List<String> pieces(String text, int size) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < text.length(); i += size) {
            out.add(text.substring(i, Math.min(text.length(), i + size)));
        }
        return out;
    }
}
