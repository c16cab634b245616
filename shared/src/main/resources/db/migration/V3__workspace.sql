-- The tenant workspace (seed 000 §5, §9, §12): the bot's files (IDENTITY.md, USER.md, TOOLS.md,
-- memory/, skills/) kept in PostgreSQL so that any worker can serve any chat.

CREATE TABLE workspace_files (
    tenant_id   text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    -- Canonical relative path ("memory/MEMORY.md"), as WorkspacePaths.normalize makes it.
    path        text NOT NULL CHECK (length(path) BETWEEN 1 AND 512),
    -- Text only; the store refuses more than 1 MiB before it gets here, this is the backstop.
    content     text NOT NULL CHECK (octet_length(content) <= 1048576),
    -- 1 when created, +1 on every write: the token of compare-and-set writes.
    version     bigint NOT NULL DEFAULT 1 CHECK (version > 0),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, path)
);

-- Set once, in the statement that seeds the default files: a default file the tenant deleted
-- stays deleted, and two nodes seeding at the same time seed once.
ALTER TABLE tenants ADD COLUMN workspace_seeded_at timestamptz;
