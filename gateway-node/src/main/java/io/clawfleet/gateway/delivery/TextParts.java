package io.clawfleet.gateway.delivery;

import io.vertx.core.Future;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * Cuts a reply into the parts a platform takes in one message (Telegram 4,096 characters, Slack 4,000), where a reader
 * would: the same rule for every channel.
 */
public final class TextParts {

    private TextParts() {
    }

    /**
     * Sends the parts of a reply in order with {@code sendPart}, skipping the first {@code partsSent} (out on an earlier
     * attempt) and recording each with {@code partDone} before the next, as {@link ChannelSender#send} asks. A one-part
     * reply is recorded as delivered by the caller.
     */
    public static Future<Void> send(List<String> parts, int partsSent, IntFunction<Future<?>> partDone,
                                    Function<String, Future<Void>> sendPart) {
        Future<Void> chain = Future.succeededFuture();
        for (int i = Math.min(partsSent, parts.size()); i < parts.size(); i++) {
            String part = parts.get(i);
            int done = i + 1;
            chain = chain.compose(v -> sendPart.apply(part))
                    .compose(v -> parts.size() == 1 ? Future.<Void>succeededFuture() : partDone.apply(done).<Void>mapEmpty());
        }
        return chain;
    }

    /**
     * Splits text into parts of at most {@code limit} characters at the best boundary in the second half of the limit: a paragraph (blank
     * line), else a line break, else the end of a sentence, else a space; a text with none of them is cut at the limit,
     * never inside a surrogate pair. A code block cut in two is closed at the end of one part and opened again at the
     * start of the next (the limit leaves room for that). Deterministic; only the whitespace at a cut is lost.
     */
    public static List<String> split(String text, int limit) {
        List<String> parts = new ArrayList<>();
        String rest = text.isEmpty() ? " " : text;
        String reopen = "";
        while (reopen.length() + rest.length() > limit) {
            int cut = cut(rest, limit - FENCE_ROOM);
            String part = reopen + rest.substring(0, cut).stripTrailing();
            rest = rest.substring(cut).stripLeading();
            String open = openFence(part);
            reopen = open == null ? "" : open + "\n";
            parts.add(open == null ? part : part + "\n```");
        }
        parts.add(reopen + rest);
        return parts;
    }

    /** Room a part keeps to close a code block and open it again ({@code \n```} and {@code ```lang\n}). */
    private static final int FENCE_ROOM = 40;

    /** The opening fence line ({@code ```lang}) of a code block the text leaves open, or null. */
    private static String openFence(String text) {
        String open = null;
        for (String line : text.split("\n")) {
            if (line.strip().startsWith("```")) {
                open = open == null ? line.strip() : null;
            }
        }
        return open == null ? null : open.substring(0, Math.min(open.length(), FENCE_ROOM - 5));
    }

    /** Where to end the first part of a text longer than {@code limit}. */
    public static int cut(String text, int limit) {
        int floor = limit / 2;
        int paragraph = text.lastIndexOf("\n\n", limit - 2);
        if (paragraph >= floor) {
            return paragraph;
        }
        int line = text.lastIndexOf('\n', limit - 1);
        if (line >= floor) {
            return line;
        }
        for (int i = limit - 1; i > floor; i--) {
            char c = text.charAt(i - 1);
            if ((c == '.' || c == '!' || c == '?' || c == '\u3002') && Character.isWhitespace(text.charAt(i))) {
                return i;
            }
        }
        int space = text.lastIndexOf(' ', limit - 1);
        if (space >= floor) {
            return space;
        }
        return Character.isHighSurrogate(text.charAt(limit - 1)) ? limit - 1 : limit;
    }
}
