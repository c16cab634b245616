package io.clawfleet.shared.cluster;

import java.util.Set;

/**
 * A live cluster member as Clawfleet sees it.
 *
 * @param nodeId  the stable node id (leases name owners by it)
 * @param roles   roles the member carries: gateway, worker, sandbox, scheduler
 * @param httpUrl where its HTTP endpoints (/readyz, /metrics, ...) answer
 */
public record Member(String nodeId, Set<String> roles, String httpUrl) {

    public Member {
        roles = Set.copyOf(roles);
    }

    public boolean hasRole(String role) {
        return roles.contains(role);
    }
}
