-- Tenants are real (issue 13): the operator creates, suspends and resumes them; a tenant has keys
-- of its own with scopes, a visible prefix, an expiry and a last-used time.
ALTER TABLE tenants
    ADD COLUMN status     text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
    ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();

-- A key is shown once and stored as the SHA-256 of the whole key (256 bits of entropy: no salt
-- needed). Its id and prefix are public: they name the key in lists and logs.
ALTER TABLE api_keys
    ADD COLUMN id           text,
    ADD COLUMN prefix       text,
    ADD COLUMN scopes       text[] NOT NULL DEFAULT '{admin}',
    ADD COLUMN expires_at   timestamptz,
    ADD COLUMN last_used_at timestamptz;
-- Keys made before this version (CLAWFLEET_API_KEY) keep working, with every scope.
UPDATE api_keys SET id = 'k' || substr(key_hash, 1, 15), prefix = '(configured)';
ALTER TABLE api_keys
    ALTER COLUMN id SET NOT NULL,
    ALTER COLUMN prefix SET NOT NULL,
    ADD CONSTRAINT api_keys_scopes_check CHECK (scopes <@ ARRAY['chat', 'read', 'admin']::text[] AND cardinality(scopes) > 0);
CREATE UNIQUE INDEX api_keys_id ON api_keys (id);
-- Tenants are listed by id with a cursor.
