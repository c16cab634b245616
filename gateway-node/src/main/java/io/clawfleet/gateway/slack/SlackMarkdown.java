package io.clawfleet.gateway.slack;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Models answer in Markdown; Slack has a format of its own, {@code mrkdwn}. This turns the common Markdown of model
 * answers into it: bold ({@code **b**} → {@code *b*}), italic ({@code *i*} → {@code _i_}), strike-through
 * ({@code ~~s~~} → {@code ~s~}), inline code and fenced code blocks (the language dropped: Slack has no highlighting),
 * links to http(s) URLs ({@code <url|text>}), headings (bold) and bullets ({@code •}). {@code & < >} are escaped
 * everywhere, as Slack asks, so text cannot make a mention ({@code <!channel>}, {@code <@U123>}) or a link of its own.
 * Markdown it does not understand stays as typed.
 */
final class SlackMarkdown {

    private static final Pattern CODE_SPAN = Pattern.compile("`([^`\\n]+)`");
    private static final Pattern LINK = Pattern.compile("\\[([^\\]\\n]+)\\]\\((https?://[^\\s)|]+)\\)");
    private static final Pattern BOLD = Pattern.compile("\\*\\*(?=\\S)(.+?)(?<=\\S)\\*\\*|__(?=\\S)(.+?)(?<=\\S)__");
    private static final Pattern STRIKE = Pattern.compile("~~(?=\\S)(.+?)(?<=\\S)~~");
    private static final Pattern ITALIC = Pattern.compile(
            "(?<![\\w*])\\*(?=[^\\s*])(.+?)(?<=[^\\s*])\\*(?![\\w*])|(?<![\\w_])_(?=[^\\s_])(.+?)(?<=[^\\s_])_(?![\\w_])");
    private static final Pattern HEADING = Pattern.compile("^\\s{0,3}#{1,6}\\s+(.*?)\\s*#*\\s*$");
    private static final Pattern BULLET = Pattern.compile("^(\\s*)[-*+]\\s+(.*)$");

    private SlackMarkdown() {
    }

    static String toMrkdwn(String markdown) {
        StringBuilder out = new StringBuilder(markdown.length() + 32);
        String[] lines = markdown.split("\n", -1);
        boolean code = false;
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            if (line.strip().startsWith("```")) {
                out.append("```"); // Slack's block: no language
                code = !code;
            } else {
                out.append(code ? escape(line) : line(line));
            }
            if (i < lines.length - 1) {
                out.append('\n');
            }
        }
        if (code) {
            out.append("\n```"); // a block the text never closed ends with it
        }
        return out.toString();
    }

    private static String line(String line) {
        Matcher heading = HEADING.matcher(line);
        if (heading.matches()) {
            return "*" + inline(heading.group(1)) + "*";
        }
        Matcher bullet = BULLET.matcher(line);
        if (bullet.matches() && !line.strip().matches("[-*_]{3,}")) {
            return bullet.group(1) + "• " + inline(bullet.group(2));
        }
        return inline(line);
    }

    /** Code spans first (nothing inside them is formatting), then the rest. */
    private static String inline(String text) {
        StringBuilder out = new StringBuilder(text.length() + 16);
        Matcher code = CODE_SPAN.matcher(text);
        int at = 0;
        while (code.find()) {
            out.append(emphasis(text.substring(at, code.start())));
            out.append('`').append(escape(code.group(1))).append('`');
            at = code.end();
        }
        out.append(emphasis(text.substring(at)));
        return out.toString();
    }

    /**
     * Links are cut out before the escaping (their {@code <...>} is Slack's syntax), the rest is escaped, then emphasis:
     * italic before bold, since Slack's bold ({@code *b*}) is Markdown's italic.
     */
    private static String emphasis(String text) {
        StringBuilder out = new StringBuilder(text.length() + 16);
        Matcher link = LINK.matcher(text);
        int at = 0;
        while (link.find()) {
            out.append(styled(escape(text.substring(at, link.start()))));
            out.append('<').append(escape(link.group(2))).append('|').append(styled(escape(link.group(1)))).append('>');
            at = link.end();
        }
        out.append(styled(escape(text.substring(at))));
        return out.toString();
    }

    private static String styled(String escaped) {
        String text = ITALIC.matcher(escaped).replaceAll(m -> "_" + Matcher.quoteReplacement(m.group(1) != null ? m.group(1) : m.group(2)) + "_");
        text = BOLD.matcher(text).replaceAll(m -> "*" + Matcher.quoteReplacement(m.group(1) != null ? m.group(1) : m.group(2)) + "*");
        return STRIKE.matcher(text).replaceAll("~$1~");
    }

    /** Slack's three control characters. */
    static String escape(String text) {
        StringBuilder out = new StringBuilder(text.length() + 8);
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '<' -> out.append("&lt;");
                case '>' -> out.append("&gt;");
                case '&' -> out.append("&amp;");
                default -> out.append(c);
            }
        }
        return out.toString();
    }
}
