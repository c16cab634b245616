package io.clawfleet.shared.security;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;

/** A block of addresses, {@code 10.0.0.0/8} or {@code fc00::/7}, written with literals only (never resolved). */
public record Cidr(byte[] network, int prefix, String text) {

    public static Cidr parse(String text) {
        String[] parts = text.strip().split("/", -1);
        try {
            if (parts.length > 2 || !(parts[0].contains(":") || parts[0].matches("\\d{1,3}(\\.\\d{1,3}){3}"))) {
                throw new IllegalArgumentException();
            }
            byte[] address = InetAddress.getByName(parts[0]).getAddress();
            int prefix = parts.length == 2 ? Integer.parseInt(parts[1]) : address.length * 8;
            if (prefix < 0 || prefix > address.length * 8) {
                throw new IllegalArgumentException();
            }
            return new Cidr(address, prefix, text.strip());
        } catch (UnknownHostException | IllegalArgumentException e) {
            throw new IllegalArgumentException("'" + text + "' is not an address block like 127.0.0.1/32 or fd00::/8");
        }
    }

    public boolean contains(byte[] address) {
        if (address.length != network.length) {
            return false;
        }
        int full = prefix / 8;
        if (!Arrays.equals(address, 0, full, network, 0, full)) {
            return false;
        }
        int rest = prefix % 8;
        if (rest == 0) {
            return true;
        }
        int mask = 0xFF << (8 - rest) & 0xFF;
        return (address[full] & mask) == (network[full] & mask);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof Cidr cidr && cidr.prefix == prefix && Arrays.equals(cidr.network, network);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(network) + prefix;
    }

    @Override
    public String toString() {
        return text;
    }
}
