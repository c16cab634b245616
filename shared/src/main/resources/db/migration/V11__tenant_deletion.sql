-- Tenant deletion (issue 13): the operator deletes a tenant; a gateway removes its rows table by table
-- in small batches, each its own short transaction, and any gateway carries on if that one dies.

-- 'deleting': marked before the first row goes, so its keys, bots and tasks stop at once.
ALTER TABLE tenants DROP CONSTRAINT tenants_status_check;
ALTER TABLE tenants ADD CONSTRAINT tenants_status_check CHECK (status IN ('active', 'suspended', 'deleting'));

-- One row per deletion, kept after the tenant is gone: the tombstone says who asked, when, and how
-- many rows of each table went. tenant_id is deliberately not a foreign key.
CREATE TABLE tenant_deletions (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id     text NOT NULL,
    tenant_name   text NOT NULL,
    requested_by  text NOT NULL,
    requested_at  timestamptz NOT NULL DEFAULT now(),
    state         text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done')),
    -- rows deleted per table, e.g. {"inbox": 20000, "messages": 40000}; written in each batch's transaction
    counts        jsonb NOT NULL DEFAULT '{}'::jsonb,
    batches       bigint NOT NULL DEFAULT 0,
    -- the gateway working on it, and until when; past lease_until any gateway may take it over
    lease_node    text,
    lease_until   timestamptz NOT NULL DEFAULT '-infinity',
    started_at    timestamptz,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    finished_at   timestamptz
);
-- At most one deletion of a tenant runs; a second DELETE finds it.
CREATE UNIQUE INDEX tenant_deletions_running ON tenant_deletions (tenant_id) WHERE state = 'running';
CREATE INDEX tenant_deletions_tenant ON tenant_deletions (tenant_id, id);

-- Deleting a chat cascades to its tasks: without this each deleted chat would scan all tasks
-- (tasks_chat leads with tenant_id).
CREATE INDEX tasks_chat_id ON tasks (chat_id);

-- The audit row of a finished deletion outlives the tenant, so it names no tenant_id (the tenant is
-- in metadata_json); the tenant's own GET /api/v1/audit never returns it.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_tenant_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_tenant_check
    CHECK (tenant_id IS NOT NULL OR event_type IN ('auth_failure_burst', 'tenant_deleted'));
