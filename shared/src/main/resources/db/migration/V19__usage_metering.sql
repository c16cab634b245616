-- Usage metering (issue 14): GET /api/v1/usage and GET /admin/v1/usage sum these columns per day, bot, model and key.

-- What a model call cost, as the turn's commit records it with the call's tokens (so a replayed turn is counted
-- once, like its tokens). cached_tokens: the input tokens the provider served from its prompt cache (part of
-- input_tokens). cost_micros: millionths of the price's currency, NULL when the model has no configured price
-- (unknown, which is not 0).
ALTER TABLE llm_usage
    ADD COLUMN cached_tokens integer NOT NULL DEFAULT 0,
    ADD COLUMN cost_micros   bigint;

-- The API key that sent the message (api_keys.id, public; never the key). NULL for a message of a channel
-- (Telegram, ...), a scheduled task's firing, an approval decision, and for rows from before this version.
-- A turn's usage rows name their message (llm_usage.inbox_id), so usage per key is a join, not a copy.
ALTER TABLE inbox ADD COLUMN api_key_id text;

-- Messages accepted by a tenant in a time range: the usage queries read the inbox by (tenant, received_at).
CREATE INDEX inbox_tenant_received ON inbox (tenant_id, received_at);
