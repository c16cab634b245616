-- Bots as MCP servers (issue 16): the sessions of MCP clients (Mcp-Session-Id) live here, not in one gateway, so any
-- gateway serves a session's next request and a client whose gateway died goes on with the same session.
CREATE TABLE mcp_sessions (
    -- SHA-256 hex of the session id the client holds: a database reader learns no usable id
    id               text        PRIMARY KEY,
    tenant_id        text        NOT NULL REFERENCES tenants (id),
    bot_id           text        NOT NULL,
    -- the public id of the API key that opened the session: only requests with that key may use it
    key_id           text        NOT NULL,
    protocol_version text        NOT NULL,
    client_name      text,
    client_version   text,
    log_level        text        NOT NULL DEFAULT 'info',
    -- resource URIs the client subscribed to (resources/subscribe)
    subscriptions    jsonb       NOT NULL DEFAULT '[]'::jsonb,
    created_at       timestamptz NOT NULL DEFAULT now(),
    -- touched at most once a minute; a session idle past its TTL is dropped by any gateway
    last_seen_at     timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, bot_id) REFERENCES bots (tenant_id, id)
);
CREATE INDEX mcp_sessions_tenant_bot ON mcp_sessions (tenant_id, bot_id);
CREATE INDEX mcp_sessions_last_seen ON mcp_sessions (last_seen_at);

-- The SSE stream of a tool call that talks to the bot (send_message): what a client needs to resume it with
-- Last-Event-ID on any gateway. The reply itself is in the outbox; an event id says how much of it the client has.
CREATE TABLE mcp_streams (
    id             text        PRIMARY KEY,
    session_id     text        NOT NULL REFERENCES mcp_sessions (id) ON DELETE CASCADE,
    tenant_id      text        NOT NULL,
    bot_id         text        NOT NULL,
    request_id     jsonb       NOT NULL,
    progress_token jsonb,
    inbox_id       bigint      NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mcp_streams_session ON mcp_streams (session_id);
CREATE INDEX mcp_streams_tenant ON mcp_streams (tenant_id, bot_id);
