package io.clawfleet.sandbox.web;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.security.SsrfGuard;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The URL rules of {@code web_fetch} (seed 000 §12.5): http and https only, no credentials in the
 * URL, the port allow and deny lists, and the domain allowlist. What the host resolves to is the
 * {@link SsrfGuard}'s business.
 */
public final class WebPolicy {

    /** A URL that passed the rules: where to connect, and what to ask for. */
    public record Target(URI uri, String host, int port, boolean https, String requestUri) {
    }

    private static final Pattern AUTHORITY = Pattern.compile("([A-Za-z0-9._-]+|\\[[0-9A-Fa-f:.%]+])(?::([0-9]{1,5}))?");

    private final List<String> allowedDomains;
    private final List<Integer> allowedPorts;
    private final List<Integer> blockedPorts;

    public WebPolicy(ClawfleetConfig.Web config) {
        Objects.requireNonNull(config);
        this.allowedDomains = config.allowedDomains();
        this.allowedPorts = config.allowedPorts();
        this.blockedPorts = config.blockedPorts();
    }

    /** @throws WebRefusal saying which rule the URL breaks */
    public Target check(String url) {
        if (url == null || url.isBlank()) {
            throw new WebRefusal("the URL is empty");
        }
        if (url.length() > 8_192) {
            throw new WebRefusal("the URL is longer than 8192 characters");
        }
        URI uri;
        try {
            uri = new URI(url.strip()).normalize();
        } catch (URISyntaxException e) {
            throw new WebRefusal("'" + url + "' is not a valid URL: " + e.getReason());
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("http") && !scheme.equals("https")) {
            throw new WebRefusal("only http:// and https:// URLs can be fetched, not '" + (scheme.isEmpty() ? url : scheme + ":") + "'");
        }
        if (uri.getRawUserInfo() != null) {
            throw new WebRefusal("URLs with a user name or password are not fetched");
        }
        String host = uri.getHost();
        int port = uri.getPort();
        if (host == null) {
            // java.net.URI leaves hosts it does not consider names (2130706433, 0x7f.1, my_host) to the authority.
            String[] hostAndPort = authority(url, uri.getRawAuthority());
            host = hostAndPort[0];
            port = hostAndPort[1] == null ? -1 : Integer.parseInt(hostAndPort[1]);
        }
        host = host.toLowerCase(Locale.ROOT);
        if (host.endsWith(".")) {
            host = host.substring(0, host.length() - 1);
        }
        boolean https = scheme.equals("https");
        port = port == -1 ? (https ? 443 : 80) : port;
        if (blockedPorts.contains(port) || (!allowedPorts.isEmpty() && !allowedPorts.contains(port))) {
            throw new WebRefusal("port " + port + " is not allowed" + (allowedPorts.isEmpty() ? ""
                    : " (allowed: " + String.join(", ", allowedPorts.stream().map(String::valueOf).toList()) + ")"));
        }
        if (!allowedDomains.isEmpty() && allowedDomains.stream().noneMatch(domainOf(host))) {
            throw new WebRefusal(host + " is not among the sites this bot may fetch (" + String.join(", ", allowedDomains) + ")");
        }
        String path = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath();
        String requestUri = uri.getRawQuery() == null ? path : path + "?" + uri.getRawQuery();
        return new Target(uri, host, port, https, requestUri);
    }

    private static String[] authority(String url, String authority) {
        String invalid = "'" + url + "' has no valid host name (write international names in punycode)";
        if (authority == null || authority.isEmpty()) {
            throw new WebRefusal(invalid);
        }
        if (authority.contains("@")) {
            throw new WebRefusal("URLs with a user name or password are not fetched");
        }
        Matcher matcher = AUTHORITY.matcher(authority);
        if (!matcher.matches()) {
            throw new WebRefusal(invalid);
        }
        String port = matcher.group(2);
        if (port != null && (port.length() > 5 || Integer.parseInt(port) > 65_535)) {
            throw new WebRefusal(invalid);
        }
        return new String[] {matcher.group(1), port};
    }

    private static java.util.function.Predicate<String> domainOf(String host) {
        return domain -> host.equals(domain) || host.endsWith("." + domain);
    }

    /** A URL the policy refuses, with the reason for the model. */
    public static final class WebRefusal extends RuntimeException {
        public WebRefusal(String message) {
            super(message, null, false, false);
        }
    }
}
