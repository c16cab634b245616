-- Push channels (Telegram first): the bots chats reach Clawfleet through, and the delivery
-- state of replies that must be sent out rather than fetched.

CREATE TABLE channel_bots (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id      text NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    channel        text NOT NULL CHECK (channel IN ('telegram')),
    name           text NOT NULL,
    -- The bot's secret token; never returned by the API. token_hash makes a token unique.
    token          text NOT NULL,
    token_hash     text NOT NULL UNIQUE,
    api_url        text NOT NULL,
    enabled        boolean NOT NULL DEFAULT true,
    -- Updates below this id are in the inbox (Telegram's getUpdates offset).
    update_offset  bigint NOT NULL DEFAULT 0,
    -- One gateway polls a bot at a time, under this lease.
    poller_node    text,
    poller_until   timestamptz NOT NULL DEFAULT '-infinity',
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX channel_bots_tenant ON channel_bots (tenant_id);

-- Replies of push channels are delivered by a gateway, in chat order, with retries.
ALTER TABLE outbox ADD COLUMN push boolean NOT NULL DEFAULT false;
ALTER TABLE outbox ADD COLUMN claimed_by text;
ALTER TABLE outbox ADD COLUMN claimed_until timestamptz;
ALTER TABLE outbox DROP CONSTRAINT outbox_status_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_status_check CHECK (status IN ('pending', 'sending', 'delivered', 'dead'));
CREATE INDEX outbox_push_due ON outbox (next_attempt_at) WHERE push AND status IN ('pending', 'sending');
CREATE INDEX outbox_push_chat ON outbox (chat_id, seq) WHERE push AND status IN ('pending', 'sending');
