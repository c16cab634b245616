package io.clawfleet.shared.security;

import io.vertx.core.Future;
import io.vertx.core.Vertx;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * Where a request whose URL a tenant chose (a bot's Telegram API URL today; webhooks, MCP servers and
 * model base URLs as they come) may connect from a node of the control plane: only to public addresses,
 * unless the operator allow-listed the host or its address block ({@code egress.allowedHosts}). The
 * host is resolved once and every address it has is checked; the caller connects to the address
 * returned, never resolving again, so a DNS answer cannot change between the check and the connection.
 */
public final class EgressGuard {

    /** How host names become addresses; the real one asks the system resolver off the event loop. */
    @FunctionalInterface
    public interface Resolver {
        Future<List<InetAddress>> resolve(String host);
    }

    /** The URL may not be reached from here; the message names the host and why, for the operator's log. */
    public static final class Refused extends RuntimeException {
        public Refused(String message) {
            super(message, null, false, false);
        }
    }

    private final Set<String> allowedNames = new TreeSet<>();
    private final SsrfGuard guard;
    private final Resolver resolver;

    /**
     * @param allowed host names and address blocks (or single addresses) let through although not public
     */
    public EgressGuard(List<String> allowed, Resolver resolver) {
        List<String> blocks = new ArrayList<>();
        for (String entry : allowed) {
            String clean = entry.strip().toLowerCase(Locale.ROOT);
            if (clean.isEmpty()) {
                continue;
            }
            if (isAddressOrBlock(clean)) {
                Cidr.parse(clean);
                blocks.add(clean);
            } else {
                allowedNames.add(clean);
            }
        }
        this.guard = new SsrfGuard(blocks);
        this.resolver = Objects.requireNonNull(resolver);
    }

    /** A guard resolving with the system resolver on a worker thread. */
    public static EgressGuard system(Vertx vertx, List<String> allowed) {
        return new EgressGuard(allowed, host -> vertx.executeBlocking(() -> List.of(InetAddress.getAllByName(host)), false));
    }

    /** The address to connect to for {@code host}; fails with {@link Refused} when it may not be reached. */
    public Future<InetAddress> address(String host) {
        if (host == null || host.isEmpty()) {
            return Future.failedFuture(new Refused("the URL has no host"));
        }
        String name = host.toLowerCase(Locale.ROOT);
        InetAddress literal;
        try {
            literal = SsrfGuard.literal(name);
        } catch (IllegalArgumentException e) {
            return Future.failedFuture(new Refused(e.getMessage()));
        }
        boolean trusted = allowedNames.contains(name);
        Future<List<InetAddress>> addresses = literal != null ? Future.succeededFuture(List.of(literal))
                : resolver.resolve(name).recover(e -> Future.failedFuture(new Refused("the host " + host + " could not be resolved")));
        return addresses.compose(list -> {
            if (list.isEmpty()) {
                return Future.failedFuture(new Refused("the host " + host + " has no address"));
            }
            if (!trusted) {
                // Every address must pass: a name that also resolves to an internal address is refused outright.
                for (InetAddress address : list) {
                    String refusal = guard.refusal(address);
                    if (refusal != null) {
                        return Future.failedFuture(new Refused(literal != null ? refusal : host + " resolves to " + refusal));
                    }
                }
            }
            return Future.succeededFuture(list.get(0));
        });
    }

    /** Whether an allow-list entry is written as an address or a block (else it is a host name). */
    public static boolean isAddressOrBlock(String entry) {
        return entry.matches("[0-9a-f.:]*[.:][0-9a-f.:]*(/\\d+)?") && (entry.contains(":") || entry.matches("[0-9.]+(/\\d+)?"));
    }
}
