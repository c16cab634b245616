package io.clawfleet.gateway.whatsapp;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Models answer in Markdown; WhatsApp has its own few marks: {@code *bold*}, {@code _italic_}, {@code ~strike~},
 * {@code `code`} and {@code ```monospace```}. This turns the common Markdown of model answers into them: bold
 * ({@code **b**} → {@code *b*}), italic ({@code *i*} → {@code _i_}), strike-through ({@code ~~s~~} → {@code ~s~}),
 * links as {@code text (url)} (WhatsApp shows a URL as a link, and has no link text), headings bold, bullets {@code •},
 * code kept (a block's language dropped). Nothing needs escaping: WhatsApp has no markup that could mention or link
 * beyond what a URL in the text already does. What it does not understand stays as typed.
 */
final class WhatsAppFormat {

    private static final Pattern CODE_SPAN = Pattern.compile("`([^`\\n]+)`");
    private static final Pattern LINK = Pattern.compile("\\[([^\\]\\n]+)\\]\\((https?://[^\\s)]+)\\)");
    private static final Pattern BOLD = Pattern.compile("\\*\\*(?=\\S)(.+?)(?<=\\S)\\*\\*|__(?=\\S)(.+?)(?<=\\S)__");
    private static final Pattern STRIKE = Pattern.compile("~~(?=\\S)(.+?)(?<=\\S)~~");
    private static final Pattern ITALIC = Pattern.compile(
            "(?<![\\w*])\\*(?=[^\\s*])(.+?)(?<=[^\\s*])\\*(?![\\w*])|(?<![\\w_])_(?=[^\\s_])(.+?)(?<=[^\\s_])_(?![\\w_])");
    private static final Pattern HEADING = Pattern.compile("^\\s{0,3}#{1,6}\\s+(.*?)\\s*#*\\s*$");
    private static final Pattern BULLET = Pattern.compile("^(\\s*)[-*+]\\s+(.*)$");

    private WhatsAppFormat() {
    }

    static String fromMarkdown(String markdown) {
        StringBuilder out = new StringBuilder(markdown.length() + 16);
        String[] lines = markdown.split("\n", -1);
        boolean code = false;
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            if (line.strip().startsWith("```")) {
                out.append("```");
                code = !code;
            } else {
                out.append(code ? line : line(line));
            }
            if (i < lines.length - 1) {
                out.append('\n');
            }
        }
        if (code) {
            out.append("\n```");
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

    private static String inline(String text) {
        StringBuilder out = new StringBuilder(text.length() + 16);
        Matcher code = CODE_SPAN.matcher(text);
        int at = 0;
        while (code.find()) {
            out.append(styled(text.substring(at, code.start()))).append('`').append(code.group(1)).append('`');
            at = code.end();
        }
        return out.append(styled(text.substring(at))).toString();
    }

    /** Links first (their URL must not be styled), then italic before bold, since WhatsApp's bold is Markdown's italic. */
    private static String styled(String text) {
        StringBuilder out = new StringBuilder(text.length() + 16);
        Matcher link = LINK.matcher(text);
        int at = 0;
        while (link.find()) {
            out.append(emphasis(text.substring(at, link.start()))).append(emphasis(link.group(1))).append(" (")
                    .append(link.group(2)).append(')');
            at = link.end();
        }
        return out.append(emphasis(text.substring(at))).toString();
    }

    private static String emphasis(String text) {
        String out = ITALIC.matcher(text).replaceAll(m -> "_" + Matcher.quoteReplacement(m.group(1) != null ? m.group(1) : m.group(2)) + "_");
        out = BOLD.matcher(out).replaceAll(m -> "*" + Matcher.quoteReplacement(m.group(1) != null ? m.group(1) : m.group(2)) + "*");
        return STRIKE.matcher(out).replaceAll("~$1~");
    }
}
