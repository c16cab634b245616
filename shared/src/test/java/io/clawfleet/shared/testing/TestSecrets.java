package io.clawfleet.shared.testing;

import io.clawfleet.shared.security.MasterKeys;
import io.clawfleet.shared.security.TenantKeys;
import io.vertx.sqlclient.Pool;

import java.util.List;

/** Tenant secret keys for tests: the test master key of {@link TestNodes}. */
public final class TestSecrets {

    private TestSecrets() {
    }

    public static MasterKeys masterKeys() {
        return MasterKeys.of(List.of(MasterKeys.decode(TestNodes.TEST_MASTER_KEY, "the test master key")));
    }

    public static TenantKeys tenantKeys(Pool pool) {
        return new TenantKeys(pool, masterKeys());
    }
}
