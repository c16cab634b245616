-- Message rates narrower than the tenant's (issue 14): a key's and a bot's messagesPerMinute, each held cluster-wide
-- the way the tenant's is (V17). A window row per scope: '' is the tenant's own (as before), 'key:<keyId>' a key's,
-- 'bot:<botId>' a bot's. Rows written before this migration are the tenant's.
ALTER TABLE tenant_rate_windows ADD COLUMN scope text NOT NULL DEFAULT '';
ALTER TABLE tenant_rate_windows DROP CONSTRAINT tenant_rate_windows_pkey;
ALTER TABLE tenant_rate_windows ADD PRIMARY KEY (tenant_id, scope, window_start);

-- A key's own rate, set by the tenant's admin when the key is made (kept by a rotation); null: none.
ALTER TABLE api_keys ADD COLUMN messages_per_minute integer CHECK (messages_per_minute BETWEEN 0 AND 1000000);

-- A bot's rate is its setting messagesPerMinute. The gateway reads the rates of a tenant's bots in the statement that
-- looks a key up; this index makes that read touch only the bots that have one (none, for most tenants).
CREATE INDEX bots_message_rates ON bots (tenant_id) WHERE settings ? 'messagesPerMinute';
