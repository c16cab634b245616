-- Discord (issue 15): a channel account can be a Discord bot. Its messages come over Discord's Gateway, a WebSocket that
-- one gateway node at a time holds for the bot, under the same lease as Telegram polling (mode 'polling', poller_node,
-- poller_until). The bot token is sealed as other tokens are; account_user_id is the bot's own user id (how a mention of
-- it is recognised). A node that takes the lease over resumes the session the last holder had, from the last event it
-- took: Discord then sends again what came after, and the inbox's idempotency keys make those no-ops.
ALTER TABLE channel_bots DROP CONSTRAINT channel_bots_channel_check;
ALTER TABLE channel_bots ADD CONSTRAINT channel_bots_channel_check
    CHECK (channel IN ('telegram', 'slack', 'whatsapp', 'webhook', 'webchat', 'discord'));
ALTER TABLE channel_bots ADD COLUMN gateway_session_id text;
ALTER TABLE channel_bots ADD COLUMN gateway_resume_url text;
-- The sequence number of the last event taken (it starts again at 1 in a new session, unlike update_offset).
ALTER TABLE channel_bots ADD COLUMN gateway_seq bigint NOT NULL DEFAULT 0;
-- The application's public key (hex, Ed25519), with which Discord signs its posts to the Interactions Endpoint URL
-- (slash commands). Public: kept as it is. Null when the account takes no interactions.
ALTER TABLE channel_bots ADD COLUMN interactions_key text;
ALTER TABLE channel_bots ADD CONSTRAINT channel_bots_discord_account
    CHECK (channel <> 'discord' OR (account_user_id IS NOT NULL AND mode = 'polling'));
