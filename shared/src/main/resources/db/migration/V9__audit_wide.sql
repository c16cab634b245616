-- The audit trail widens from tool calls to every configuration write over HTTP, every role
-- change and auth-failure bursts (issue 22). Who: the tenant and the API key's id (a prefix of
-- its SHA-256 digest, never the key) and name. An HTTP write names its route template
-- (/api/v1/chats/:channel/:chatKey/role), not the raw path, its status and, on failure, its error id.
ALTER TABLE audit_events
    ADD COLUMN key_id      text,
    ADD COLUMN key_name    text,
    ADD COLUMN http_method text,
    ADD COLUMN route       text,
    ADD COLUMN status_code int,
    ADD COLUMN error_id    text;

-- Events of the cluster, not of a tenant (an auth-failure burst knows no tenant: the key was
-- not valid), have no tenant_id. Only the kinds named here may; the tenant's GET /api/v1/audit
-- never returns them (tenant_id = $1 is never true of NULL).
ALTER TABLE audit_events ALTER COLUMN tenant_id DROP NOT NULL;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_tenant_check
    CHECK (tenant_id IS NOT NULL OR event_type IN ('auth_failure_burst'));

-- GET /api/v1/audit pages by id within a tenant.
CREATE INDEX audit_events_tenant_id ON audit_events (tenant_id, id);
