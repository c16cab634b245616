-- Messages outlive their inbox rows in usage (issue 20): the retention pass that prunes inbox rows adds them, in the
-- same statement, to these sums per UTC day (of acceptance), bot and key; usage reports count the inbox rows still
-- there and these. key_id is the API key's public id, '' for a message no key sent (a channel's, a task's firing).
-- Pruned with the usage rows (usageRetentionDays). A bot's deletion keeps them, as it keeps the usage rows.
CREATE TABLE usage_messages_daily (
    tenant_id  text   NOT NULL,
    day        date   NOT NULL,
    bot_id     text   NOT NULL,
    key_id     text   NOT NULL,
    messages   bigint NOT NULL CHECK (messages > 0),
    PRIMARY KEY (tenant_id, day, bot_id, key_id)
);

-- The key of a model call, copied from its message by the turn's commit, so that usage per key outlives the inbox row
-- it was read from (and a tool run's key is read from its turn's calls). NULL for calls of no key (a channel's message,
-- compaction) and for rows from before this version, whose key is still read through their message while it is kept.
ALTER TABLE llm_usage ADD COLUMN api_key_id text;
