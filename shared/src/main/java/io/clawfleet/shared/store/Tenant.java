package io.clawfleet.shared.store;

/** A tenant: the owner of bots, chats and keys. Everything a tenant owns carries its id. */
public record Tenant(String id, String name, String timeZone) {
}
