-- Messages a channel brought while their tenant was over a quota (issue 14): kept here, not sent to a model, until
-- the tenant asks for them to be processed (POST /api/v1/deferred/replay) or they expire (after 7 days, by a
-- sweep on the gateways). idempotency_key is the one the message would have had in the inbox, so a replay that
-- runs twice, or a message that was also accepted before, is one inbox row.
CREATE TABLE deferred_messages (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id        text NOT NULL,
    bot_id           text NOT NULL,
    channel          text NOT NULL,
    chat_key         text NOT NULL,
    idempotency_key  text NOT NULL,
    sender_id        text NOT NULL,
    text             text NOT NULL,
    reason           text NOT NULL,
    received_at      timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, bot_id) REFERENCES bots (tenant_id, id) ON DELETE CASCADE,
    UNIQUE (tenant_id, bot_id, channel, chat_key, idempotency_key)
);
CREATE INDEX deferred_messages_tenant ON deferred_messages (tenant_id, bot_id, id);
CREATE INDEX deferred_messages_received ON deferred_messages (received_at);

-- One over-quota notice per chat and quota period: the first deferred message of a chat gets it, the rest do not.
CREATE TABLE deferred_notices (
    tenant_id     text NOT NULL,
    bot_id        text NOT NULL,
    channel       text NOT NULL,
    chat_key      text NOT NULL,
    period_end    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, bot_id, channel, chat_key, period_end),
    FOREIGN KEY (tenant_id, bot_id) REFERENCES bots (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX deferred_notices_end ON deferred_notices (period_end);
