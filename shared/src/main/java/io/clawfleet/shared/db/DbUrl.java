package io.clawfleet.shared.db;

import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;

/**
 * A parsed {@code postgresql://user:password@host:port/database} URL, convertible to the forms the
 * reactive client and JDBC (for migrations) want. User and password may be percent-encoded.
 */
public record DbUrl(String host, int port, String database, String user, String password, String query) {

    public static DbUrl parse(String url) {
        if (url == null || !(url.startsWith("postgresql://") || url.startsWith("postgres://"))) {
            throw new IllegalArgumentException("the URL must start with postgresql://");
        }
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("the URL is malformed: " + e.getReason());
        }
        if (uri.getHost() == null || uri.getHost().isBlank()) {
            throw new IllegalArgumentException("the URL names no host");
        }
        String path = uri.getRawPath();
        if (path == null || path.length() < 2) {
            throw new IllegalArgumentException("the URL names no database");
        }
        String user = null;
        String password = null;
        if (uri.getRawUserInfo() != null) {
            String[] parts = uri.getRawUserInfo().split(":", 2);
            user = decode(parts[0]);
            password = parts.length > 1 ? decode(parts[1]) : null;
        }
        DbUrl parsed = new DbUrl(uri.getHost(), uri.getPort() < 0 ? 5432 : uri.getPort(), decode(path.substring(1)),
                user, password, uri.getRawQuery());
        DbSsl.mode(parsed);
        return parsed;
    }

    /** A query parameter's value ({@code sslmode}, {@code sslrootcert}), percent-decoded; null when absent. */
    public String parameter(String name) {
        if (query == null) {
            return null;
        }
        for (String pair : query.split("&")) {
            int eq = pair.indexOf('=');
            String key = decode(eq < 0 ? pair : pair.substring(0, eq));
            if (key.equals(name)) {
                return eq < 0 ? "" : decode(pair.substring(eq + 1));
            }
        }
        return null;
    }

    public String jdbcUrl() {
        return "jdbc:postgresql://" + host + ":" + port + "/" + database + (query == null ? "" : "?" + query);
    }

    /** The whole URL, password included (percent-encoded), for a child process's environment; never log it. */
    public String url() {
        return "postgresql://" + (user == null ? "" : encode(user) + (password == null ? "" : ":" + encode(password)) + "@")
                + host + ":" + port + "/" + database + (query == null ? "" : "?" + query);
    }

    private static String encode(String text) {
        return java.net.URLEncoder.encode(text, StandardCharsets.UTF_8).replace("+", "%20");
    }

    /** The URL without its password, for logs. */
    public String redacted() {
        return "postgresql://" + (user == null ? "" : user + (password == null ? "" : ":***") + "@")
                + host + ":" + port + "/" + database;
    }

    /** Percent-decoding only; unlike form decoding, '+' stays a plus (it is common in passwords). */
    private static String decode(String text) {
        return URLDecoder.decode(text.replace("+", "%2B"), StandardCharsets.UTF_8);
    }
}
