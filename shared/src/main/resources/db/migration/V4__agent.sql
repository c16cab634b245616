-- The agent: its execution ledger, token usage, approvals, admin bootstrap, per-chat settings.

-- Steps of a turn in progress (model answers with tool calls, tool results), written under the
-- partition's epoch. A turn re-run after a crash replays them instead of calling the model and
-- running the tools again; the turn's commit deletes them.
CREATE TABLE turn_steps (
    inbox_id    bigint NOT NULL,
    step        integer NOT NULL,
    tenant_id   text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('model', 'tool')),
    payload     jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (inbox_id, step)
);

-- Tokens per turn and model (a turn may use more than one model: fallback, maintenance).
CREATE TABLE llm_usage (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id      text NOT NULL,
    chat_id        bigint NOT NULL,
    inbox_id       bigint,
    provider       text,
    model          text NOT NULL,
    input_tokens   integer NOT NULL,
    output_tokens  integer NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX llm_usage_tenant_at ON llm_usage (tenant_id, created_at);

-- A tool call waiting for the chat's /yes, /no or /always (seed 001 bc_approval).
CREATE TABLE pending_approvals (
    chat_id     bigint PRIMARY KEY REFERENCES chats (id) ON DELETE CASCADE,
    tenant_id   text NOT NULL,
    inbox_id    bigint NOT NULL,
    tool        text NOT NULL,
    call_id     text NOT NULL,
    arguments   jsonb NOT NULL,
    state       jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- The first admin of a tenant's chats (seed 000 §12.3): single use, lockout after failures.
CREATE TABLE admin_bootstrap (
    tenant_id     text PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    used_at       timestamptz,
    used_by_chat  bigint,
    failures      integer NOT NULL DEFAULT 0,
    locked_until  timestamptz
);

ALTER TABLE conversation_state
    ADD COLUMN disabled_skills jsonb NOT NULL DEFAULT '[]'::jsonb,
    ADD COLUMN always_allowed jsonb NOT NULL DEFAULT '[]'::jsonb,
    ADD COLUMN consolidated_through bigint NOT NULL DEFAULT 0;

-- The model role a message asked for (the OpenAI-compatible API's "model"); null = the default role.
ALTER TABLE inbox ADD COLUMN model_role text;
