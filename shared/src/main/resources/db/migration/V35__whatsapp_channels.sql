-- WhatsApp Cloud API (issue 15): a channel account can be a WhatsApp business phone number taking events by webhook.
-- account_user_id holds the number's id (phone_number_id), token_enc the access token, signing_secret_enc the Meta
-- app secret (X-Hub-Signature-256 is an HMAC under it), webhook_secret_hash the SHA-256 of the verify token Meta sends
-- back when the webhook is set up. token_hash makes the number (not the token, which one system user shares across
-- numbers) registered once.
ALTER TABLE channel_bots DROP CONSTRAINT channel_bots_channel_check;
ALTER TABLE channel_bots ADD CONSTRAINT channel_bots_channel_check CHECK (channel IN ('telegram', 'slack', 'whatsapp'));
ALTER TABLE channel_bots ADD CONSTRAINT channel_bots_whatsapp_account
    CHECK (channel <> 'whatsapp' OR (signing_secret_enc IS NOT NULL AND account_user_id IS NOT NULL AND mode = 'webhook'
                                     AND webhook_secret_hash IS NOT NULL));
