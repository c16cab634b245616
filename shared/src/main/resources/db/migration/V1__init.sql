-- Clawfleet schema v1: the data model of seed 000 §11, adapted to tenants and partitions.
-- Every row that belongs to a tenant carries tenant_id.

-- One row: facts fixed when the cluster's database is created.
CREATE TABLE cluster_meta (
    id          boolean PRIMARY KEY DEFAULT true CHECK (id),
    partitions  integer NOT NULL CHECK (partitions > 0),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tenants (
    id          text PRIMARY KEY CHECK (id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    name        text NOT NULL,
    time_zone   text NOT NULL DEFAULT 'UTC',
    settings    jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- API keys are stored as SHA-256 hex digests; the key itself is shown once, never stored.
CREATE TABLE api_keys (
    key_hash    text PRIMARY KEY,
    tenant_id   text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name        text NOT NULL DEFAULT 'default',
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id);

-- A conversation: (tenant, channel, chat_key). in_seq counts accepted inbound messages; the
-- row lock taken to bump it orders a chat's messages by commit.
CREATE TABLE chats (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id       text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    channel         text NOT NULL,
    chat_key        text NOT NULL,
    partition       integer NOT NULL,
    display_name    text,
    role            text NOT NULL DEFAULT 'normal' CHECK (role IN ('admin', 'normal')),
    registered      boolean NOT NULL DEFAULT false,
    in_seq          bigint NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_message_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, channel, chat_key)
);

-- Worker-side state of a conversation, written only under the partition's lease.
CREATE TABLE conversation_state (
    chat_id          bigint PRIMARY KEY REFERENCES chats (id) ON DELETE CASCADE,
    tenant_id        text NOT NULL,
    done_seq         bigint NOT NULL DEFAULT 0,
    reply_seq        bigint NOT NULL DEFAULT 0,
    summary          text,
    enabled_skills   jsonb NOT NULL DEFAULT '[]'::jsonb,
    last_compact_at  timestamptz,
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- The durable inbox. A message is accepted when its row commits; idempotency_key (the channel's
-- own message id) makes a retried send return the same row.
CREATE TABLE inbox (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id        text NOT NULL,
    chat_id          bigint NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    partition        integer NOT NULL,
    seq              bigint NOT NULL,
    idempotency_key  text NOT NULL,
    sender_id        text NOT NULL,
    kind             text NOT NULL DEFAULT 'user' CHECK (kind IN ('user', 'task')),
    text             text NOT NULL,
    reply_node       text,
    metadata         jsonb,
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'dead')),
    attempts         integer NOT NULL DEFAULT 0,
    received_at      timestamptz NOT NULL DEFAULT now(),
    done_at          timestamptz,
    UNIQUE (chat_id, idempotency_key),
    UNIQUE (chat_id, seq)
);
CREATE INDEX inbox_pending ON inbox (partition, chat_id, seq) WHERE status = 'pending';

-- Conversation history as the model sees it.
CREATE TABLE messages (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id     text NOT NULL,
    chat_id       bigint NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    inbox_id      bigint,
    role          text NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    sender_id     text,
    content       text,
    tool_calls    jsonb,
    tool_call_id  text,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX messages_chat ON messages (chat_id, id);

-- Replies. The id is deterministic (derived from what is answered), so a re-run turn cannot
-- produce a second reply; seq is the reply's position in its chat.
CREATE TABLE outbox (
    id               text PRIMARY KEY,
    tenant_id        text NOT NULL,
    chat_id          bigint NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    seq              bigint NOT NULL,
    in_reply_to      bigint,
    text             text NOT NULL,
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    delivered_at     timestamptz,
    UNIQUE (chat_id, seq)
);
CREATE INDEX outbox_in_reply_to ON outbox (in_reply_to);

-- Partition ownership. Claiming or stealing increments epoch; every state write of a turn is
-- fenced by (owner_node, epoch) in its own transaction.
CREATE TABLE partition_leases (
    partition   integer PRIMARY KEY,
    owner_node  text,
    epoch       bigint NOT NULL DEFAULT 0,
    expires_at  timestamptz NOT NULL DEFAULT '-infinity',
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tasks (
    id              text PRIMARY KEY,
    tenant_id       text NOT NULL,
    chat_id         bigint NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    prompt          text NOT NULL,
    schedule_type   text NOT NULL CHECK (schedule_type IN ('cron', 'interval', 'once')),
    schedule_value  text NOT NULL,
    time_zone       text,
    context_mode    text NOT NULL DEFAULT 'group' CHECK (context_mode IN ('group', 'isolated')),
    status          text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused', 'done')),
    missed_policy   text NOT NULL DEFAULT 'fire_once' CHECK (missed_policy IN ('fire_once', 'skip')),
    next_run_at     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tasks_due ON tasks (next_run_at) WHERE status = 'active';
CREATE INDEX tasks_chat ON tasks (tenant_id, chat_id);

CREATE TABLE task_runs (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id       text NOT NULL,
    task_id         text NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    due_at          timestamptz NOT NULL,
    inbox_id        bigint,
    started_at      timestamptz,
    duration_ms     integer,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'success', 'error', 'skipped')),
    result_preview  text,
    error           text,
    UNIQUE (task_id, due_at)
);

CREATE TABLE audit_events (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id      text NOT NULL,
    at             timestamptz NOT NULL DEFAULT now(),
    event_type     text NOT NULL,
    tool_name      text,
    chat_id        bigint,
    channel        text,
    chat_key       text,
    actor_role     text,
    outcome        text NOT NULL CHECK (outcome IN ('success', 'denied', 'error', 'invalid_args')),
    reason         text,
    args_json      jsonb,
    metadata_json  jsonb
);
CREATE INDEX audit_events_tenant_at ON audit_events (tenant_id, at);

-- Work that failed for good, with its error; replayable.
CREATE TABLE dead_letters (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id    text NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('inbound', 'outbound')),
    ref_id       text NOT NULL,
    chat_id      bigint,
    payload      jsonb NOT NULL,
    error        text NOT NULL,
    attempts     integer NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now(),
    replayed_at  timestamptz,
    UNIQUE (kind, ref_id)
);
CREATE INDEX dead_letters_tenant ON dead_letters (tenant_id, created_at);
