-- Remote MCP servers a tenant gives a bot (issue 16): PUT /api/v1/bots/{botId}/mcp-servers. Their headers (bearer
-- tokens, API keys) are sealed together with the tenant's data key (secrets_enc, secrets_key_id: a JSON object
-- server -> header -> value, AES-256-GCM, bound to the tenant, the bot and the data key); config holds everything
-- else, each header's value replaced by its hint (`Bearer sk-…abcd`).
CREATE TABLE bot_mcp_servers (
    tenant_id       text NOT NULL,
    bot_id          text NOT NULL,
    config          jsonb NOT NULL CHECK (jsonb_typeof(config) = 'object'),
    secrets_enc     bytea,
    secrets_key_id  integer,
    version         bigint NOT NULL DEFAULT 1,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, bot_id),
    FOREIGN KEY (tenant_id, bot_id) REFERENCES bots (tenant_id, id) ON DELETE CASCADE,
    -- a data key cannot go while a secret sealed with it remains
    FOREIGN KEY (tenant_id, secrets_key_id) REFERENCES tenant_data_keys (tenant_id, key_id),
    CHECK ((secrets_enc IS NULL) = (secrets_key_id IS NULL))
);
