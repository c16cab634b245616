-- Telegram webhook mode (issue 15) beside polling. A bot in webhook mode is not polled: Telegram posts its updates to
-- POST /hooks/telegram/{id} at any gateway, with the secret token set by setWebhook in a header. Only the secret's
-- SHA-256 is kept (it is random, 256 bits: the digest cannot be reversed); a new secret is made at every switch.
ALTER TABLE channel_bots ADD COLUMN mode text NOT NULL DEFAULT 'polling' CHECK (mode IN ('polling', 'webhook'));
ALTER TABLE channel_bots ADD COLUMN webhook_secret_hash bytea;
ALTER TABLE channel_bots ADD COLUMN webhook_url text;
ALTER TABLE channel_bots ADD CONSTRAINT channel_bots_webhook
    CHECK (mode = 'polling' OR (webhook_secret_hash IS NOT NULL AND webhook_url IS NOT NULL));
