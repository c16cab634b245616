package io.clawfleet.gateway.telegram;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Models answer in Markdown; Telegram shows it as typed unless it is given in one of its own formats. This turns the
 * common Markdown of model answers into Telegram's HTML ({@code parse_mode: HTML}): fenced code blocks, inline code,
 * bold, italic, strike-through, links (http and https only), headings (bold) and bullets ({@code •}); everything else
 * is text, with {@code < > & "} escaped. Markdown it does not understand stays as typed. Where the result is HTML
 * Telegram still refuses (overlapping emphasis, say), the sender falls back to the plain text.
 */
final class TelegramMarkdown {

    private static final Pattern CODE_SPAN = Pattern.compile("`([^`\\n]+)`");
    private static final Pattern LINK = Pattern.compile("\\[([^\\]\\n]+)\\]\\((https?://[^\\s)]+)\\)");
    private static final Pattern BOLD = Pattern.compile("\\*\\*(?=\\S)(.+?)(?<=\\S)\\*\\*|__(?=\\S)(.+?)(?<=\\S)__");
    private static final Pattern STRIKE = Pattern.compile("~~(?=\\S)(.+?)(?<=\\S)~~");
    private static final Pattern ITALIC = Pattern.compile(
            "(?<![\\w*])\\*(?=[^\\s*])(.+?)(?<=[^\\s*])\\*(?![\\w*])|(?<![\\w_])_(?=[^\\s_])(.+?)(?<=[^\\s_])_(?![\\w_])");
    private static final Pattern HEADING = Pattern.compile("^\\s{0,3}#{1,6}\\s+(.*?)\\s*#*\\s*$");
    private static final Pattern BULLET = Pattern.compile("^(\\s*)[-*+]\\s+(.*)$");

    private TelegramMarkdown() {
    }

    static String toHtml(String markdown) {
        StringBuilder out = new StringBuilder(markdown.length() + 32);
        String[] lines = markdown.split("\n", -1);
        StringBuilder code = null;
        String language = null;
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            boolean last = i == lines.length - 1;
            if (line.strip().startsWith("```")) {
                if (code == null) {
                    code = new StringBuilder();
                    language = line.strip().substring(3).strip();
                } else {
                    out.append(pre(code, language));
                    code = null;
                    if (!last) {
                        out.append('\n');
                    }
                }
                continue;
            }
            if (code != null) {
                if (!code.isEmpty()) {
                    code.append('\n');
                }
                code.append(line);
                continue;
            }
            out.append(line(line));
            if (!last) {
                out.append('\n');
            }
        }
        if (code != null) {
            out.append(pre(code, language)); // a block the text never closed ends with it
        }
        return out.toString();
    }

    private static String pre(StringBuilder code, String language) {
        String open = language == null || language.isEmpty() || !language.matches("[A-Za-z0-9_+#.-]{1,32}") ? "<pre>"
                : "<pre><code class=\"language-" + language + "\">";
        return open + escape(code.toString()) + (open.length() > 5 ? "</code></pre>" : "</pre>");
    }

    private static String line(String line) {
        Matcher heading = HEADING.matcher(line);
        if (heading.matches()) {
            return "<b>" + inline(heading.group(1)) + "</b>";
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
            out.append(emphasis(escape(text.substring(at, code.start()))));
            out.append("<code>").append(escape(code.group(1))).append("</code>");
            at = code.end();
        }
        out.append(emphasis(escape(text.substring(at))));
        return out.toString();
    }

    private static String emphasis(String escaped) {
        String text = LINK.matcher(escaped).replaceAll("<a href=\"$2\">$1</a>");
        text = BOLD.matcher(text).replaceAll(m -> "<b>" + Matcher.quoteReplacement(m.group(1) != null ? m.group(1) : m.group(2)) + "</b>");
        text = STRIKE.matcher(text).replaceAll("<s>$1</s>");
        return ITALIC.matcher(text).replaceAll(m -> "<i>" + Matcher.quoteReplacement(m.group(1) != null ? m.group(1) : m.group(2)) + "</i>");
    }

    static String escape(String text) {
        StringBuilder out = new StringBuilder(text.length() + 8);
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '<' -> out.append("&lt;");
                case '>' -> out.append("&gt;");
                case '&' -> out.append("&amp;");
                case '"' -> out.append("&quot;");
                default -> out.append(c);
            }
        }
        return out.toString();
    }
}
