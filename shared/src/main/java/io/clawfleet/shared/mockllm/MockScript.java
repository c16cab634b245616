package io.clawfleet.shared.mockllm;

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

    /** Tool calls are scripted only when the request offers tools, as a real model would. */
    static Reply decide(String text, boolean toolsOffered) {
        Matcher fail = FAIL.matcher(text);
        if (fail.find()) {
            return new Fail(Integer.parseInt(fail.group(1)));
        }
        if (toolsOffered) {
            List<Call> calls = calls(text);
            if (!calls.isEmpty()) {
                return new Calls(calls);
            }
        }
        return new Text("echo: " + text);
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

    /** Splits text into pieces of at most {@code size} characters, the way streamed arguments arrive. */
    static List<String> pieces(String text, int size) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < text.length(); i += size) {
            out.add(text.substring(i, Math.min(text.length(), i + size)));
        }
        return out;
    }
}
