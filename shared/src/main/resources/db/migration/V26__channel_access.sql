-- Who may talk to a bot through a channel account (issue 15), as OpenClaw and nanobot do it.
-- dm_policy: open (anyone), allowlist (only the senders allowed below; others are ignored), pairing (an unknown sender
-- gets a one-time code the tenant approves). group_policy: mention (a group message counts only when it names the bot
-- or answers it), open (every group message), off (groups ignored). With a dm_policy other than open, a group message
-- also needs an allowed sender.
ALTER TABLE channel_bots ADD COLUMN dm_policy text NOT NULL DEFAULT 'open' CHECK (dm_policy IN ('open', 'allowlist', 'pairing'));
ALTER TABLE channel_bots ADD COLUMN group_policy text NOT NULL DEFAULT 'mention' CHECK (group_policy IN ('mention', 'open', 'off'));

-- The senders of a channel account: allowed (listed by the tenant, or paired), or pending with a one-time code.
CREATE TABLE channel_senders (
    channel_bot_id  bigint NOT NULL REFERENCES channel_bots (id) ON DELETE CASCADE,
    tenant_id       text NOT NULL,
    bot_id          text NOT NULL,
    sender_id       text NOT NULL,
    status          text NOT NULL CHECK (status IN ('allowed', 'pending')),
    -- pending only: the code the sender was given, until when it holds, the chat it was given in, when it was sent
    code            text,
    code_expires_at timestamptz,
    chat_id         text,
    notified_at     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    approved_at     timestamptz,
    PRIMARY KEY (channel_bot_id, sender_id),
    FOREIGN KEY (tenant_id, bot_id) REFERENCES bots (tenant_id, id) ON DELETE CASCADE,
    CHECK ((status = 'pending') = (code IS NOT NULL AND code_expires_at IS NOT NULL))
);
CREATE UNIQUE INDEX channel_senders_code ON channel_senders (tenant_id, bot_id, code) WHERE status = 'pending';
CREATE INDEX channel_senders_bot ON channel_senders (tenant_id, bot_id);
