package io.clawfleet.gateway.telegram;

import io.clawfleet.gateway.delivery.MarkdownText;

import java.util.regex.Matcher;

/**
 * Models answer in Markdown; Telegram shows it as typed unless it is given in one of its own formats. This turns the
 * common Markdown of model answers into Telegram's HTML ({@code parse_mode: HTML}): fenced code blocks, inline code,
 * bold, italic, strike-through, links (http and https only), headings (bold) and bullets ({@code •}); everything else
 * is text, with {@code < > & "} escaped. Markdown it does not understand stays as typed. Where the result is HTML
 * Telegram still refuses (overlapping emphasis, say), the sender falls back to the plain text.
 */
final class TelegramMarkdown {

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
        return MarkdownText.line(line, TelegramMarkdown::inline, title -> "<b>" + title + "</b>");
    }

    /** Code spans first (nothing inside them is formatting), then the rest. */
    private static String inline(String text) {
        StringBuilder out = new StringBuilder(text.length() + 16);
        Matcher code = MarkdownText.CODE_SPAN.matcher(text);
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
        String text = MarkdownText.LINK.matcher(escaped).replaceAll("<a href=\"$2\">$1</a>");
        text = MarkdownText.BOLD.matcher(text).replaceAll(m -> "<b>" + MarkdownText.inner(m) + "</b>");
        text = MarkdownText.STRIKE.matcher(text).replaceAll("<s>$1</s>");
        return MarkdownText.ITALIC.matcher(text).replaceAll(m -> "<i>" + MarkdownText.inner(m) + "</i>");
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
