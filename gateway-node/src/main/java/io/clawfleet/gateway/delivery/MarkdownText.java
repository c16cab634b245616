package io.clawfleet.gateway.delivery;

import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Markdown of model answers as the chat platforms' converters read it: the patterns they share, and the walk over
 * lines, code blocks, headings and bullets of the platforms whose marks are plain text (Slack, WhatsApp). Telegram's HTML
 * has a walk of its own (its code blocks are elements).
 */
public final class MarkdownText {

    public static final Pattern CODE_SPAN = Pattern.compile("`([^`\\n]+)`");
    public static final Pattern LINK = Pattern.compile("\\[([^\\]\\n]+)\\]\\((https?://[^\\s)]+)\\)");
    public static final Pattern BOLD = Pattern.compile("\\*\\*(?=\\S)(.+?)(?<=\\S)\\*\\*|__(?=\\S)(.+?)(?<=\\S)__");
    public static final Pattern STRIKE = Pattern.compile("~~(?=\\S)(.+?)(?<=\\S)~~");
    public static final Pattern ITALIC = Pattern.compile(
            "(?<![\\w*])\\*(?=[^\\s*])(.+?)(?<=[^\\s*])\\*(?![\\w*])|(?<![\\w_])_(?=[^\\s_])(.+?)(?<=[^\\s_])_(?![\\w_])");
    public static final Pattern HEADING = Pattern.compile("^\\s{0,3}#{1,6}\\s+(.*?)\\s*#*\\s*$");
    public static final Pattern BULLET = Pattern.compile("^(\\s*)[-*+]\\s+(.*)$");

    private MarkdownText() {
    }

    /** The text of a bold or italic match, whichever of its two forms matched. */
    public static String inner(java.util.regex.MatchResult match) {
        return Matcher.quoteReplacement(match.group(1) != null ? match.group(1) : match.group(2));
    }

    /**
     * One line outside code: a heading as {@code heading} makes it, a bullet as {@code •}, the rest as {@code inline}
     * makes it (a rule such as {@code ---} is not a bullet).
     */
    public static String line(String line, UnaryOperator<String> inline, UnaryOperator<String> heading) {
        Matcher title = HEADING.matcher(line);
        if (title.matches()) {
            return heading.apply(inline.apply(title.group(1)));
        }
        Matcher bullet = BULLET.matcher(line);
        if (bullet.matches() && !line.strip().matches("[-*_]{3,}")) {
            return bullet.group(1) + "• " + inline.apply(bullet.group(2));
        }
        return inline.apply(line);
    }

    /**
     * Markdown to marks that are plain text: fenced code blocks become {@code ```} blocks (their language dropped, each
     * of their lines as {@code codeLine} makes it, a block never closed closed at the end), every other line by
     * {@link #line} with {@code *...*} headings.
     */
    public static String convert(String markdown, UnaryOperator<String> codeLine, UnaryOperator<String> inline) {
        StringBuilder out = new StringBuilder(markdown.length() + 32);
        String[] lines = markdown.split("\n", -1);
        boolean code = false;
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            if (line.strip().startsWith("```")) {
                out.append("```");
                code = !code;
            } else {
                out.append(code ? codeLine.apply(line) : line(line, inline, title -> "*" + title + "*"));
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

    /** Bold, italic and strike-through as marks that are plain text: italic first, since their bold is Markdown's italic. */
    public static String emphasis(String text, String bold, String italic, String strike) {
        String out = ITALIC.matcher(text).replaceAll(m -> italic + inner(m) + italic);
        out = BOLD.matcher(out).replaceAll(m -> bold + inner(m) + bold);
        return STRIKE.matcher(out).replaceAll(Matcher.quoteReplacement(strike) + "$1" + Matcher.quoteReplacement(strike));
    }
}
