-- Tenant secrets at rest (issue 14): envelope encryption. Each tenant has a random 256-bit data key, stored
-- here wrapped (AES-256-GCM) by a master key that never reaches the database; master_key_id names that key so
-- it can be rotated (clawfleet secrets rotate-master). The tenant's row going takes its keys with it.
CREATE TABLE tenant_data_keys (
    tenant_id      text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    key_id         integer NOT NULL CHECK (key_id > 0),
    wrapped_key    bytea NOT NULL,
    master_key_id  text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    rewrapped_at   timestamptz,
    PRIMARY KEY (tenant_id, key_id)
);
CREATE INDEX tenant_data_keys_master ON tenant_data_keys (master_key_id);

-- A bot's token: sealed with its tenant's data key (token_enc, token_key_id), shown only as a hint. The
-- plaintext column stays for rows written before a master key was configured; a gateway that has one
-- seals them at start and clears it.
ALTER TABLE channel_bots ALTER COLUMN token DROP NOT NULL;
ALTER TABLE channel_bots ADD COLUMN token_enc bytea;
ALTER TABLE channel_bots ADD COLUMN token_key_id integer;
ALTER TABLE channel_bots ADD COLUMN token_hint text;
ALTER TABLE channel_bots ADD CONSTRAINT channel_bots_token_present
    CHECK (token IS NOT NULL OR (token_enc IS NOT NULL AND token_key_id IS NOT NULL));
-- A data key cannot go while a secret sealed with it remains.
ALTER TABLE channel_bots ADD CONSTRAINT channel_bots_token_key
    FOREIGN KEY (tenant_id, token_key_id) REFERENCES tenant_data_keys (tenant_id, key_id);
-- The hint the API shows instead of a token: the bot's public id and the token's last four characters.
UPDATE channel_bots SET token_hint = split_part(token, ':', 1) || ':…'
       || CASE WHEN length(split_part(token, ':', 2)) >= 16 THEN right(token, 4) ELSE '' END
 WHERE token IS NOT NULL;
