package io.clawfleet.shared.security;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Locale;

/**
 * Decides whether a request a tenant or a model can steer ({@code web_fetch}, the Telegram API URL of a
 * tenant's bot) may connect to an address (seed 003, SSRF protection): never to
 * loopback, private, carrier-grade NAT, link-local (the cloud metadata service at 169.254.169.254),
 * multicast, reserved or documentation ranges, nor to their IPv6 forms, including IPv6 addresses
 * that embed such an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo). Hosts written as
 * numbers are read the way browsers read them (decimal, octal, hexadecimal, 1 to 4 parts), so
 * {@code 2130706433}, {@code 0177.1} and {@code 0x7f.0.0.1} are all loopback.
 */
public final class SsrfGuard {

    private static final List<Named> BLOCKED = List.of(
            v("0.0.0.0/8", "the 'this network' range (0.0.0.0 reaches the local host)"),
            v("10.0.0.0/8", "a private network"),
            v("100.64.0.0/10", "a carrier-grade NAT range (used by some cloud metadata services)"),
            v("127.0.0.0/8", "the loopback network"),
            v("169.254.0.0/16", "a link-local address (cloud metadata services live at 169.254.169.254)"),
            v("172.16.0.0/12", "a private network"),
            v("192.0.0.0/24", "an IETF protocol range"),
            v("192.0.2.0/24", "a documentation range"),
            v("192.88.99.0/24", "the 6to4 relay range"),
            v("192.168.0.0/16", "a private network"),
            v("198.18.0.0/15", "a benchmarking range"),
            v("198.51.100.0/24", "a documentation range"),
            v("203.0.113.0/24", "a documentation range"),
            v("224.0.0.0/4", "a multicast address"),
            v("240.0.0.0/4", "a reserved range (or broadcast)"),
            v("::/128", "the unspecified address"),
            v("::1/128", "the loopback address"),
            v("::/96", "an IPv4-compatible address"),
            v("64:ff9b:1::/48", "a local NAT64 range"),
            v("100::/64", "the discard range"),
            v("2001::/23", "an IETF protocol range (Teredo and others)"),
            v("2001:db8::/32", "a documentation range"),
            v("fc00::/7", "a unique local (private) address"),
            v("fe80::/10", "a link-local address"),
            v("fec0::/10", "a site-local address"),
            v("ff00::/8", "a multicast address"));
    private static final Cidr NAT64 = Cidr.parse("64:ff9b::/96");
    private static final Cidr SIX_TO_FOUR = Cidr.parse("2002::/16");

    private record Named(Cidr range, String what) {
    }

    private final List<Cidr> exceptions;

    /** @param allowedPrivateRanges blocks let through anyway (sandbox.web.allowedPrivateRanges); dangerous */
    public SsrfGuard(List<String> allowedPrivateRanges) {
        this.exceptions = allowedPrivateRanges.stream().map(Cidr::parse).toList();
    }

    /** Null when {@code address} may be connected to, else why not, in words for the model. */
    public String refusal(InetAddress address) {
        byte[] bytes = address.getAddress();
        for (Cidr exception : exceptions) {
            if (exception.contains(bytes)) {
                return null;
            }
        }
        String embedded = embeddedRefusal(address);
        if (embedded != null) {
            return embedded;
        }
        for (Named blocked : BLOCKED) {
            if (blocked.range().contains(bytes)) {
                return address.getHostAddress() + " is " + blocked.what() + " (" + blocked.range() + "), which may not be reached from here";
            }
        }
        return null;
    }

    /** An IPv6 address carrying an IPv4 one is judged by the IPv4 address inside. */
    private String embeddedRefusal(InetAddress address) {
        if (!(address instanceof Inet6Address)) {
            return null;
        }
        byte[] bytes = address.getAddress();
        byte[] v4 = null;
        if (NAT64.contains(bytes)) {
            v4 = new byte[] {bytes[12], bytes[13], bytes[14], bytes[15]};
        } else if (SIX_TO_FOUR.contains(bytes)) {
            v4 = new byte[] {bytes[2], bytes[3], bytes[4], bytes[5]};
        } else if (isMapped(bytes)) {
            v4 = new byte[] {bytes[12], bytes[13], bytes[14], bytes[15]};
        }
        if (v4 == null) {
            return null;
        }
        try {
            String inner = refusal(InetAddress.getByAddress(v4));
            return inner == null ? null : address.getHostAddress() + " embeds " + inner;
        } catch (UnknownHostException e) {
            return "an unreadable embedded IPv4 address";
        }
    }

    private static boolean isMapped(byte[] bytes) {
        for (int i = 0; i < 10; i++) {
            if (bytes[i] != 0) {
                return false;
            }
        }
        return (bytes[10] & 0xFF) == 0xFF && (bytes[11] & 0xFF) == 0xFF;
    }

    /**
     * The address a URL host denotes when it is written as an address: an IPv6 literal in brackets,
     * or an IPv4 address in any of the forms browsers accept; null when it is a name to resolve.
     *
     * @throws IllegalArgumentException when it looks like an address but is not a valid one
     */
    public static InetAddress literal(String host) {
        String h = host.toLowerCase(Locale.ROOT);
        if (h.startsWith("[") && h.endsWith("]")) {
            String inner = h.substring(1, h.length() - 1);
            if (inner.contains("%") || !inner.matches("[0-9a-f:.]+")) {
                throw new IllegalArgumentException("'" + host + "' is not a valid IPv6 address (zone ids are not allowed)");
            }
            try {
                return InetAddress.getByName(inner);
            } catch (UnknownHostException e) {
                throw new IllegalArgumentException("'" + host + "' is not a valid IPv6 address");
            }
        }
        if (h.endsWith(".")) {
            h = h.substring(0, h.length() - 1);
        }
        String[] parts = h.split("\\.", -1);
        // As in the WHATWG URL standard: a host whose last label is a number is an IPv4 address, or invalid.
        if (!isNumber(parts[parts.length - 1])) {
            return null;
        }
        if (parts.length > 4) {
            throw new IllegalArgumentException("'" + host + "' is not a valid IPv4 address (more than 4 parts)");
        }
        long value = 0;
        for (int i = 0; i < parts.length; i++) {
            long part = number(host, parts[i]);
            boolean last = i == parts.length - 1;
            long max = last ? (1L << (8 * (5 - parts.length))) - 1 : 255;
            if (part > max) {
                throw new IllegalArgumentException("'" + host + "' is not a valid IPv4 address (part '" + parts[i] + "' is too large)");
            }
            value = last ? (value << (8 * (5 - parts.length))) | part : (value << 8) | part;
        }
        try {
            return Inet4Address.getByAddress(new byte[] {(byte) (value >>> 24), (byte) (value >>> 16), (byte) (value >>> 8),
                    (byte) value});
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("'" + host + "' is not a valid IPv4 address");
        }
    }

    private static boolean isNumber(String label) {
        return !label.isEmpty() && (label.matches("[0-9]+") || label.matches("0x[0-9a-f]*"));
    }

    private static long number(String host, String part) {
        try {
            if (part.startsWith("0x")) {
                return part.length() == 2 ? 0 : Long.parseLong(part.substring(2), 16);
            }
            if (part.length() > 1 && part.startsWith("0")) {
                return Long.parseLong(part.substring(1), 8);
            }
            return Long.parseLong(part);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + host + "' is not a valid IPv4 address (part '" + part + "')");
        }
    }

    private static Named v(String range, String what) {
        return new Named(Cidr.parse(range), what);
    }
}
