-- Tenant-owned model providers (issue 14): a bot may bring its own providers (base URL, API key, model, roles,
-- fallback chains, prices) instead of the operator's. The API keys are sealed together with the tenant's data key
-- (keys_enc, keys_key_id: a JSON object provider name -> key, AES-256-GCM, bound to the tenant, the bot and the
-- data key); config holds everything else, with each key's hint (`sk-…abcd`) in place of the key.
CREATE TABLE bot_providers (
    tenant_id    text NOT NULL,
    bot_id       text NOT NULL,
    config       jsonb NOT NULL CHECK (jsonb_typeof(config) = 'object'),
    keys_enc     bytea,
    keys_key_id  integer,
    version      bigint NOT NULL DEFAULT 1,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, bot_id),
    FOREIGN KEY (tenant_id, bot_id) REFERENCES bots (tenant_id, id) ON DELETE CASCADE,
    -- a data key cannot go while a secret sealed with it remains
    FOREIGN KEY (tenant_id, keys_key_id) REFERENCES tenant_data_keys (tenant_id, key_id),
    CHECK ((keys_enc IS NULL) = (keys_key_id IS NULL))
);

-- Whether the tenant's bots without providers of their own may use the operator's (the node's llm.* config).
-- The operator sets it per tenant (PATCH /admin/v1/tenants/{id} {"operatorModels": false}).
ALTER TABLE tenants ADD COLUMN operator_models boolean NOT NULL DEFAULT true;
