-- Per-tenant limits set by the operator (issue 13, the first of issue 14's): how many bots, keys, channels and
-- tasks a tenant may have, e.g. {"bots": 5, "keys": 20}. A limit not named here is the node's default.
ALTER TABLE tenants ADD COLUMN limits jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(limits) = 'object');
