package io.clawfleet.shared.security;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Redacts credentials from text before it is stored, logged or shown to a model (seed 001
 * {@code bc_scrubber}): the patterns of common keys and assignments, and the literal values of
 * the secrets this node knows (its provider keys), wherever they appear.
 */
public final class SecretScrubber {

    public static final String REDACTED = "[REDACTED]";

    /**
     * A pattern of a kind of secret, and the plain substrings of which a match must contain one:
     * looking for those first (an intrinsic {@code indexOf}) skips the regular expression for almost
     * every text, where running all of them took a tenth of a node's CPU under load.
     *
     * @param anyOf       a match contains at least one of these (in lower case when {@code ignoreCase})
     * @param ignoreCase  the pattern is case-insensitive (ASCII): look in the lower-cased text
     * @param assignment  a match also contains ':' or '='
     */
    private record Kind(Pattern pattern, List<String> anyOf, boolean ignoreCase, boolean assignment) {

        boolean mayMatch(String text, String lower) {
            if (assignment && text.indexOf(':') < 0 && text.indexOf('=') < 0) {
                return false;
            }
            String haystack = ignoreCase ? lower : text;
            for (String needle : anyOf) {
                if (haystack.contains(needle)) {
                    return true;
                }
            }
            return false;
        }
    }

    private static final List<Kind> KINDS = List.of(
            // key = value assignments: keep the name, drop the value
            new Kind(Pattern.compile("(?i)\\b((?:api[_-]?key|access[_-]?key|secret(?:[_-]?key)?|token|password|passwd|pwd|authorization)\\s*[:=]\\s*)(?:(?:Bearer|Basic)\\s+)?(\"[^\"]*\"|'[^']*'|\\S+)"),
                    List.of("key", "secret", "token", "passw", "pwd", "authorization"), true, true),
            new Kind(Pattern.compile("(?i)\\b(Bearer\\s+)[A-Za-z0-9._~+/=-]{8,}"), List.of("bearer"), true, false),
            new Kind(Pattern.compile("\\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}"), List.of("sk-"), false, false),
            new Kind(Pattern.compile("\\bgh[pousr]_[A-Za-z0-9]{20,}"), List.of("gh"), false, false),
            new Kind(Pattern.compile("\\bxox[abpr]-[A-Za-z0-9-]{10,}"), List.of("xox"), false, false),
            new Kind(Pattern.compile("\\bAKIA[0-9A-Z]{16}\\b"), List.of("AKIA"), false, false),
            new Kind(Pattern.compile("\\bAIza[0-9A-Za-z_-]{35}\\b"), List.of("AIza"), false, false),
            new Kind(Pattern.compile("\\b[0-9]{6,12}:AA[A-Za-z0-9_-]{30,}\\b"), List.of(":AA"), false, false),
            new Kind(Pattern.compile("-----BEGIN [A-Z ]*PRIVATE KEY-----[\\s\\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
                    List.of("-----BEGIN "), false, false));
    private static final Pattern PRIVATE_KEY = KINDS.get(KINDS.size() - 1).pattern();

    private final List<String> literals;

    /** @param knownSecrets values to redact wherever they appear (blank and very short ones are ignored) */
    public SecretScrubber(Collection<String> knownSecrets) {
        List<String> values = new ArrayList<>();
        for (String secret : knownSecrets) {
            if (secret != null && secret.strip().length() >= 8) {
                values.add(secret.strip());
            }
        }
        // Longest first, so a secret containing another is redacted whole.
        values.sort(Comparator.comparingInt(String::length).reversed());
        this.literals = List.copyOf(values);
    }

    /** Text held back from a stream so no secret can straddle two emitted pieces (see {@link #safeCut}). */
    public int holdBack() {
        return Math.max(128, literals.isEmpty() ? 0 : literals.get(0).length() + 1);
    }

    /**
     * Where a stream of text may be cut so that the part before the cut can be scrubbed and shown
     * now: at most {@code pending.length() - holdBack()}, at a whitespace, before any secret (pattern
     * match or known value) that would cross the cut and before an unfinished private key block.
     * Scrubbing each piece cut this way redacts every secret the whole text holds.
     *
     * @return the cut, 0 when nothing may be shown yet
     */
    public int safeCut(String pending) {
        int cut = pending.length() - holdBack();
        while (cut > 0 && !Character.isWhitespace(pending.charAt(cut - 1))) {
            cut--;
        }
        if (cut <= 0) {
            return 0;
        }
        int previous;
        do {
            previous = cut;
            cut = beforeStraddling(pending, cut);
        } while (cut != previous && cut > 0);
        return cut;
    }

    private int beforeStraddling(String pending, int cut) {
        int begin = pending.indexOf("-----BEGIN ");
        if (begin >= 0 && begin < cut) {
            Matcher block = PRIVATE_KEY.matcher(pending);
            if (!block.find(begin) || block.start() != begin) {
                cut = begin;
            }
        }
        for (String literal : literals) {
            for (int at = pending.indexOf(literal); at >= 0 && at < cut; at = pending.indexOf(literal, at + 1)) {
                if (at + literal.length() > cut) {
                    cut = at;
                }
            }
        }
        String lower = pending.toLowerCase(Locale.ROOT);
        for (Kind kind : KINDS) {
            if (!kind.mayMatch(pending, lower)) {
                continue;
            }
            Matcher matcher = kind.pattern().matcher(pending);
            while (matcher.find() && matcher.start() < cut) {
                if (matcher.end() > cut) {
                    cut = matcher.start();
                }
            }
        }
        return cut;
    }

    public String scrub(String text) {
        if (text == null || text.isEmpty()) {
            return text;
        }
        String out = text;
        for (String literal : literals) {
            out = out.replace(literal, REDACTED);
        }
        String lower = out.toLowerCase(Locale.ROOT);
        for (Kind kind : KINDS) {
            if (!kind.mayMatch(out, lower)) {
                continue;
            }
            Matcher matcher = kind.pattern().matcher(out);
            if (!matcher.find()) {
                continue;
            }
            StringBuilder result = new StringBuilder();
            do {
                String keep = matcher.groupCount() >= 1 && matcher.group(1) != null ? matcher.group(1) : "";
                matcher.appendReplacement(result, Matcher.quoteReplacement(keep + REDACTED));
            } while (matcher.find());
            matcher.appendTail(result);
            out = result.toString();
            lower = out.toLowerCase(Locale.ROOT);
        }
        return out;
    }
}
