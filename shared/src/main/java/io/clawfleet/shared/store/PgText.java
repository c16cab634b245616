package io.clawfleet.shared.store;

/**
 * PostgreSQL text and jsonb cannot hold the NUL character; a model or a tool can produce one. Text
 * headed for the database passes here, so a stray NUL becomes U+FFFD instead of a failed write
 * (which, for a turn commit, would be retried for ever).
 */
public final class PgText {

    private PgText() {
    }

    public static String clean(String text) {
        return text == null || text.indexOf('\u0000') < 0 ? text : text.replace('\u0000', '\uFFFD');
    }

    /** Encoded JSON: its escaped NUL ({@code \\u0000}), which jsonb refuses, becomes U+FFFD too. */
    public static String cleanJson(String json) {
        return json == null || !json.contains("\\u0000") ? clean(json) : clean(json.replace("\\u0000", "\\ufffd"));
    }
}
