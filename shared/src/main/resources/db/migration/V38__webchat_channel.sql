-- Web chat (issue 15): a channel account through which the end users of a tenant's own site talk to a bot, over a
-- WebSocket to any gateway. Its publishable key (shown in the page's script tag, not a secret) is "pk_<id>_<public
-- part>", the public part kept in account_user_id. Its secret, with which the tenant's backend signs end-user tokens
-- (HS256), is sealed as the account's token and as its signing secret, as an inbound webhook's is.
ALTER TABLE channel_bots DROP CONSTRAINT channel_bots_channel_check;
ALTER TABLE channel_bots ADD CONSTRAINT channel_bots_channel_check
    CHECK (channel IN ('telegram', 'slack', 'whatsapp', 'webhook', 'webchat'));
-- The origins (scheme://host[:port]) whose pages may open a web chat connection; '*' is any.
ALTER TABLE channel_bots ADD COLUMN allowed_origins text[];
-- Whether a visitor without a token from the tenant's backend gets one from the gateway (an anonymous user).
ALTER TABLE channel_bots ADD COLUMN anonymous_users boolean NOT NULL DEFAULT false;
ALTER TABLE channel_bots ADD CONSTRAINT channel_bots_webchat_account
    CHECK (channel <> 'webchat' OR (signing_secret_enc IS NOT NULL AND account_user_id IS NOT NULL
                                    AND allowed_origins IS NOT NULL AND mode = 'webhook'));
