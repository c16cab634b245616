package io.clawfleet.gateway.slack;

import io.clawfleet.gateway.delivery.MarkdownText;

import java.util.regex.Matcher;

/**
 * Models answer in Markdown; Slack has a format of its own, {@code mrkdwn}. This turns the common Markdown of model
 * answers into it: bold ({@code **b**} → {@code *b*}), italic ({@code *i*} → {@code _i_}), strike-through
 * ({@code ~~s~~} → {@code ~s~}), inline code and fenced code blocks (the language dropped: Slack has no highlighting),
 * links to http(s) URLs ({@code <url|text>}), headings (bold) and bullets ({@code •}). {@code & < >} are escaped
 * everywhere, as Slack asks, so text cannot make a mention ({@code <!channel>}, {@code <@U123>}) or a link of its own.
 * Markdown it does not understand stays as typed.
 */
final class SlackMarkdown {

    private SlackMarkdown() {
    }

    static String toMrkdwn(String markdown) {
        return MarkdownText.convert(markdown, SlackMarkdown::escape, SlackMarkdown::inline);
    }

    /** Code spans first (nothing inside them is formatting), then the rest. */
    private static String inline(String text) {
        StringBuilder out = new StringBuilder(text.length() + 16);
        Matcher code = MarkdownText.CODE_SPAN.matcher(text);
        int at = 0;
        while (code.find()) {
            out.append(links(text.substring(at, code.start())));
            out.append('`').append(escape(code.group(1))).append('`');
            at = code.end();
        }
        return out.append(links(text.substring(at))).toString();
    }

    /** Links are cut out before the escaping (their {@code <...>} is Slack's syntax), the rest is escaped, then styled. */
    private static String links(String text) {
        StringBuilder out = new StringBuilder(text.length() + 16);
        Matcher link = MarkdownText.LINK.matcher(text);
        int at = 0;
        while (link.find()) {
            out.append(styled(text.substring(at, link.start())));
            out.append('<').append(escape(link.group(2)).replace("|", "%7C")).append('|').append(styled(link.group(1))).append('>');
            at = link.end();
        }
        return out.append(styled(text.substring(at))).toString();
    }

    private static String styled(String text) {
        return MarkdownText.emphasis(escape(text), "*", "_", "~");
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
