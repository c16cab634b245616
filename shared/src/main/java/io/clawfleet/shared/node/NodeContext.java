package io.clawfleet.shared.node;

import io.clawfleet.shared.bus.BusSigner;
import io.clawfleet.shared.cluster.Membership;
import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.db.Database;
import io.clawfleet.shared.metrics.Metrics;
import io.clawfleet.shared.tracing.Tracing;
import io.vertx.core.Vertx;
import io.vertx.ext.web.Router;

/**
 * What a role gets from its node: the shared Vert.x, configuration, membership, database (null on
 * a node without database roles, such as a lone sandbox), metrics, the HTTP router to mount
 * endpoints on, and the readiness registry.
 *
 * @param partitions the cluster's partition count (0 when the node has no database)
 * @param signer     signs and checks calls, results and stream chunks with the cluster secret
 * @param tracing    the node's OpenTelemetry tracing (off unless the OTEL_* variables ask for it)
 */
public record NodeContext(
        Vertx vertx,
        ClawfleetConfig config,
        String nodeId,
        Membership membership,
        Database database,
        int partitions,
        Metrics metrics,
        Router router,
        Readiness readiness,
        BusSigner signer,
        Tracing tracing) {
}
