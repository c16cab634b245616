package io.clawfleet.gateway.http;

import io.clawfleet.shared.cluster.Member;
import io.clawfleet.shared.cluster.Membership;
import io.clawfleet.shared.http.ApiException;
import io.clawfleet.shared.node.NodeRuntime;
import io.clawfleet.shared.store.Lease;
import io.clawfleet.shared.store.LeaseStore;
import io.vertx.core.Future;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.RoutingContext;

import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/** {@code GET /api/v1/cluster}: members with their roles and published facts, and every partition with its owner and epoch. */
public final class ClusterApi {

    private final Membership membership;
    private final LeaseStore leases;

    public ClusterApi(Membership membership, LeaseStore leases) {
        this.membership = Objects.requireNonNull(membership);
        this.leases = Objects.requireNonNull(leases);
    }

    public void get(RoutingContext ctx) {
        snapshot().onComplete(result -> {
            if (result.failed()) {
                ctx.fail(ApiException.unavailable("partition leases cannot be read (database unavailable)", 1));
            } else {
                ctx.json(result.result());
            }
        });
    }

    /** The view {@link #get} answers (the operator console's cluster page adds each partition's lag to it). */
    public Future<JsonObject> snapshot() {
        return leases.all().map(all -> {
            JsonArray members = new JsonArray();
            membership.members().stream().sorted(Comparator.comparing(Member::nodeId)).forEach(m -> members.add(member(m)));
            JsonArray partitions = new JsonArray();
            Map<String, Integer> perOwner = new TreeMap<>();
            for (Lease lease : all) {
                partitions.add(new JsonObject().put("partition", lease.partition()).put("owner", lease.owner())
                        .put("epoch", lease.epoch()).put("expired", lease.expired())
                        .put("acquiredAt", lease.acquiredAt() == null ? null : lease.acquiredAt().toString()));
                if (lease.owner() != null && !lease.expired()) {
                    perOwner.merge(lease.owner(), 1, Integer::sum);
                }
            }
            JsonObject owners = new JsonObject();
            perOwner.forEach(owners::put);
            // Secure by default: a member whose bus runs without TLS (--insecure-cluster) makes the whole cluster readable.
            List<String> insecure = membership.members().stream()
                    .filter(m -> "insecure".equals(m.attributes().get(NodeRuntime.BUS_TRANSPORT)))
                    .map(Member::nodeId).sorted().toList();
            return new JsonObject().put("insecureCluster", !insecure.isEmpty())
                    .put("insecureMembers", new JsonArray(insecure))
                    .put("members", members).put("partitionCount", partitions.size())
                    .put("partitionsByOwner", owners).put("partitions", partitions);
        });
    }

    /** One member: id, roles, HTTP address, and the facts its roles publish (a sandbox's isolation level). */
    private JsonObject member(Member m) {
        JsonObject json = new JsonObject().put("nodeId", m.nodeId()).put("roles", new JsonArray(m.roles().stream().sorted().toList()))
                .put("http", m.httpUrl()).put("self", m.nodeId().equals(membership.self().nodeId()));
        JsonObject attributes = new JsonObject();
        // The bus certificate chain is for the nodes (a couple of KB of base64), not for people reading the view.
        new TreeMap<>(m.attributes()).forEach((key, value) -> {
            if (!key.equals(io.clawfleet.shared.bus.PeerTags.CHAIN_ATTRIBUTE)) {
                attributes.put(key, value);
            }
        });
        if (!attributes.isEmpty()) {
            json.put("attributes", attributes);
        }
        return json;
    }
}
