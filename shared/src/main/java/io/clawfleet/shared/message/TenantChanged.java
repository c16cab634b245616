package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;

/** Published when a tenant's settings change, so workers drop what they cached of them. */
public record TenantChanged(String type, String tenantId) implements Versioned {

    public static final String TYPE = "tenant-changed-v1";

    @JsonCreator
    public TenantChanged {
        type = Versioned.checkType(TYPE, type);
        Versioned.require(tenantId, "tenantId");
    }

    public TenantChanged(String tenantId) {
        this(TYPE, tenantId);
    }
}
