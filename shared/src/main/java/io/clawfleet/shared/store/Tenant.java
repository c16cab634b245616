package io.clawfleet.shared.store;

/**
 * A tenant: the owner of bots, chats and keys. Everything a tenant owns carries its id.
 *
 * <p>Its settings and time zone are not here: the gateway caches this record with the API key, so a
 * copy would outlive a change; they are read from {@link TenantStore} where they are used.
 */
public record Tenant(String id, String name) {
}
