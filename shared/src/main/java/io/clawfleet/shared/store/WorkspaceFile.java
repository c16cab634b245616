package io.clawfleet.shared.store;

import java.time.Instant;

/**
 * One file of a tenant's workspace.
 *
 * @param path    canonical relative path ({@link io.clawfleet.shared.workspace.WorkspacePaths#normalize})
 * @param version 1 when created, +1 on every write; the token for compare-and-set writes
 */
public record WorkspaceFile(String path, String content, long version, Instant updatedAt) {
}
