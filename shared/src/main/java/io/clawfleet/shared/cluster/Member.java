package io.clawfleet.shared.cluster;

import java.util.Map;
import java.util.Set;

/**
 * A live cluster member as Clawfleet sees it.
 *
 * @param nodeId     the stable node id (leases name owners by it)
 * @param roles      roles the member carries: gateway, worker, sandbox, scheduler
 * @param httpUrl    where its HTTP endpoints (/readyz, /metrics, ...) answer
 * @param attributes facts its roles publish when it joins, such as a sandbox's {@code isolation} level
 */
public record Member(String nodeId, Set<String> roles, String httpUrl, Map<String, String> attributes) {

    public Member {
        roles = Set.copyOf(roles);
        attributes = attributes == null ? Map.of() : Map.copyOf(attributes);
    }

    public Member(String nodeId, Set<String> roles, String httpUrl) {
        this(nodeId, roles, httpUrl, Map.of());
    }

    public boolean hasRole(String role) {
        return roles.contains(role);
    }
}
