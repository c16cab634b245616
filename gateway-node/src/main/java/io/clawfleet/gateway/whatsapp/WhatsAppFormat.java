package io.clawfleet.gateway.whatsapp;

import io.clawfleet.gateway.delivery.MarkdownText;

import java.util.regex.Matcher;

/**
 * Models answer in Markdown; WhatsApp has its own few marks: {@code *bold*}, {@code _italic_}, {@code ~strike~},
 * {@code `code`} and {@code ```monospace```}. This turns the common Markdown of model answers into them: bold
 * ({@code **b**} → {@code *b*}), italic ({@code *i*} → {@code _i_}), strike-through ({@code ~~s~~} → {@code ~s~}),
 * links as {@code text (url)} (WhatsApp shows a URL as a link, and has no link text), headings bold, bullets {@code •},
 * code kept (a block's language dropped). Nothing needs escaping: WhatsApp has no markup that could mention or link
 * beyond what a URL in the text already does. What it does not understand stays as typed.
 */
final class WhatsAppFormat {

    private WhatsAppFormat() {
    }

    static String fromMarkdown(String markdown) {
        return MarkdownText.convert(markdown, line -> line, WhatsAppFormat::inline);
    }

    private static String inline(String text) {
        StringBuilder out = new StringBuilder(text.length() + 16);
        Matcher code = MarkdownText.CODE_SPAN.matcher(text);
        int at = 0;
        while (code.find()) {
            out.append(links(text.substring(at, code.start()))).append('`').append(code.group(1)).append('`');
            at = code.end();
        }
        return out.append(links(text.substring(at))).toString();
    }

    /** Links first (their URL must not be styled), then the marks. */
    private static String links(String text) {
        StringBuilder out = new StringBuilder(text.length() + 16);
        Matcher link = MarkdownText.LINK.matcher(text);
        int at = 0;
        while (link.find()) {
            out.append(styled(text.substring(at, link.start()))).append(styled(link.group(1))).append(" (").append(link.group(2))
                    .append(')');
            at = link.end();
        }
        return out.append(styled(text.substring(at))).toString();
    }

    private static String styled(String text) {
        return MarkdownText.emphasis(text, "*", "_", "~");
    }
}
