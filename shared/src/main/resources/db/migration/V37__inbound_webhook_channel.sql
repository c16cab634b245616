-- The inbound generic webhook channel (issue 15): a channel account that takes messages posted by the tenant's own
-- systems, signed per the Standard Webhooks spec with a secret made at registration. The secret is sealed twice over
-- the same way as other accounts' secrets: as the account's token (token_enc, whose digest keeps it registered once)
-- and as its signing secret (signing_secret_enc).
ALTER TABLE channel_bots DROP CONSTRAINT channel_bots_channel_check;
ALTER TABLE channel_bots ADD CONSTRAINT channel_bots_channel_check
    CHECK (channel IN ('telegram', 'slack', 'whatsapp', 'webhook'));
ALTER TABLE channel_bots ADD CONSTRAINT channel_bots_inbound_webhook_account
    CHECK (channel <> 'webhook' OR (signing_secret_enc IS NOT NULL AND mode = 'webhook'));
