-- Slack (issue 15): a channel account can be a Slack app taking events by webhook (the Events API). Its bot token is
-- sealed in token_enc as a Telegram token is. Slack signs every request with the app's signing secret, which must be
-- read back to check a signature (a digest of it would not do): it is sealed with the tenant's data key as well, for
-- its own purpose, under the same token_key_id.
ALTER TABLE channel_bots DROP CONSTRAINT channel_bots_channel_check;
ALTER TABLE channel_bots ADD CONSTRAINT channel_bots_channel_check CHECK (channel IN ('telegram', 'slack'));
ALTER TABLE channel_bots ADD COLUMN signing_secret_enc bytea;
-- The account's own user id on its platform (a Slack app's bot user, U...): how a mention of the bot is recognised
-- and how its own messages are told apart. Null for Telegram, whose bots are mentioned by name.
ALTER TABLE channel_bots ADD COLUMN account_user_id text;
ALTER TABLE channel_bots ADD CONSTRAINT channel_bots_slack_account
    CHECK (channel <> 'slack' OR (signing_secret_enc IS NOT NULL AND account_user_id IS NOT NULL AND mode = 'webhook'));
-- A Slack account signs its requests: it has a webhook URL, and no shared secret's digest.
ALTER TABLE channel_bots DROP CONSTRAINT channel_bots_webhook;
ALTER TABLE channel_bots ADD CONSTRAINT channel_bots_webhook
    CHECK (mode = 'polling' OR (webhook_url IS NOT NULL AND (channel <> 'telegram' OR webhook_secret_hash IS NOT NULL)));
