package io.clawfleet.shared.message;

import com.fasterxml.jackson.annotation.JsonCreator;

/**
 * Published by whatever wrote or deleted a workspace file (API, tools, seeding), so that nodes
 * caching the tenant's workspace drop their copy of that file. Best-effort, like every bus message:
 * a cache must also expire on its own.
 *
 * @param path the normalized path that changed
 */
public record WorkspaceChanged(String type, String tenantId, String path) implements Versioned {

    public static final String TYPE = "workspace-changed-v1";

    @JsonCreator
    public WorkspaceChanged {
        type = Versioned.checkType(TYPE, type);
        Versioned.require(tenantId, "tenantId");
        Versioned.require(path, "path");
    }

    public WorkspaceChanged(String tenantId, String path) {
        this(TYPE, tenantId, path);
    }
}
