package io.clawfleet.shared.testing;

import io.clawfleet.shared.config.ClawfleetConfig;
import io.clawfleet.shared.config.ConfigLoader;
import io.clawfleet.shared.db.DbUrl;
import io.clawfleet.shared.node.NodeRole;
import io.clawfleet.shared.node.NodeRuntime;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/** In-JVM nodes for tests: loopback, a free HTTP port, not clustered, the given roles. */
public final class TestNodes {

    /** The master key test nodes encrypt tenant secrets with (a fixed, test-only key). */
    public static final String TEST_MASTER_KEY = "dGVzdC1vbmx5LW1hc3Rlci1rZXktMzItYnl0ZXMhISE=";

    private TestNodes() {
    }

    public static ClawfleetConfig config(String roles, Map<String, String> extra) {
        Map<String, String> overrides = new HashMap<>();
        overrides.put("roles", roles);
        overrides.put("http.host", "127.0.0.1");
        overrides.put("http.port", "0");
        overrides.put("cluster.host", "127.0.0.1");
        overrides.put("partitions", "16");
        overrides.put("masterKey", TEST_MASTER_KEY);
        overrides.putAll(extra);
        return ConfigLoader.load(null, Map.of(), overrides);
    }

    public static NodeRuntime start(ClawfleetConfig config, DbUrl db, List<Supplier<NodeRole>> roles) {
        return start(config, db, roles, null);
    }

    /** As {@link #start(ClawfleetConfig, DbUrl, List)}, tracing through {@code tracing} (null: as the OTEL_* variables say). */
    public static NodeRuntime start(ClawfleetConfig config, DbUrl db, List<Supplier<NodeRole>> roles,
                                    io.clawfleet.shared.tracing.Tracing tracing) {
        NodeRuntime runtime = Await.result(NodeRuntime.start(config, db, false, roles, tracing), Duration.ofSeconds(60));
        Await.until("node ready", Duration.ofSeconds(30), runtime::ready);
        return runtime;
    }
}
