package io.clawfleet.shared.store;

import java.time.Instant;

/**
 * A workspace file without its content: what a listing needs.
 *
 * @param size   content length in UTF-8 bytes
 * @param sha256 hex SHA-256 of the UTF-8 content, so a client can tell whether its copy differs
 */
public record WorkspaceEntry(String path, long size, long version, Instant updatedAt, String sha256) {
}
