-- Bots (issue 13): a tenant has one or more bots; a bot owns its workspace, settings, channels, tasks and
-- chats. Every tenant gets its default bot 'main', which takes over what the tenant had until now.

CREATE TABLE bots (
    tenant_id            text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    id                   text NOT NULL CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    name                 text NOT NULL,
    -- autonomy, memoryScope, defaultRole; a setting the bot does not name falls back to the node's config
    settings             jsonb NOT NULL DEFAULT '{}'::jsonb,
    status               text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'deleting')),
    workspace_seeded_at  timestamptz,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);

-- Every tenant has its bot 'main', however the tenant row is made (API, CLI, a script): made with it.
CREATE FUNCTION tenants_main_bot() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bots (tenant_id, id, name) VALUES (NEW.id, 'main', 'main') ON CONFLICT DO NOTHING;
    RETURN NEW;
END $$;
CREATE TRIGGER tenants_main_bot AFTER INSERT ON tenants FOR EACH ROW EXECUTE FUNCTION tenants_main_bot();

-- Today's single workspace and settings become bot 'main'.
INSERT INTO bots (tenant_id, id, name, settings, workspace_seeded_at)
SELECT id, 'main', 'main', settings, workspace_seeded_at FROM tenants;
ALTER TABLE tenants DROP COLUMN workspace_seeded_at;
ALTER TABLE tenants DROP COLUMN settings;

-- Chats are (tenant, bot, channel, chat_key). Rows written before bots belong to 'main'.
ALTER TABLE chats ADD COLUMN bot_id text NOT NULL DEFAULT 'main';
ALTER TABLE chats DROP CONSTRAINT chats_tenant_id_channel_chat_key_key;
ALTER TABLE chats ADD CONSTRAINT chats_identity UNIQUE (tenant_id, bot_id, channel, chat_key);
ALTER TABLE chats ADD CONSTRAINT chats_bot FOREIGN KEY (tenant_id, bot_id) REFERENCES bots (tenant_id, id);

ALTER TABLE workspace_files ADD COLUMN bot_id text NOT NULL DEFAULT 'main';
ALTER TABLE workspace_files DROP CONSTRAINT workspace_files_pkey;
ALTER TABLE workspace_files ADD PRIMARY KEY (tenant_id, bot_id, path);
ALTER TABLE workspace_files ADD CONSTRAINT workspace_files_bot FOREIGN KEY (tenant_id, bot_id) REFERENCES bots (tenant_id, id);

ALTER TABLE channel_bots ADD COLUMN bot_id text NOT NULL DEFAULT 'main';
ALTER TABLE channel_bots ADD CONSTRAINT channel_bots_bot FOREIGN KEY (tenant_id, bot_id) REFERENCES bots (tenant_id, id);

-- Usage stays with the tenant when a bot goes (it is what the tenant is billed for); the bot is named here.
ALTER TABLE llm_usage ADD COLUMN bot_id text NOT NULL DEFAULT 'main';
CREATE INDEX llm_usage_tenant_bot_at ON llm_usage (tenant_id, bot_id, created_at);

-- A key limited to some bots; NULL = every bot of the tenant. Never empty: a key whose last bot goes is revoked.
ALTER TABLE api_keys ADD COLUMN bot_ids text[];
ALTER TABLE api_keys ADD CONSTRAINT api_keys_bot_ids_check CHECK (bot_ids IS NULL OR cardinality(bot_ids) > 0);

-- A deletion is of a whole tenant (bot_id NULL) or of one of its bots, in the same batches.
ALTER TABLE tenant_deletions ADD COLUMN bot_id text;
DROP INDEX tenant_deletions_running;
CREATE UNIQUE INDEX tenant_deletions_running ON tenant_deletions (tenant_id, coalesce(bot_id, '')) WHERE state = 'running';
