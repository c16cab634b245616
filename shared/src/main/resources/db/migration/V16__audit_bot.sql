-- Audit rows name the bot they concern (issue 13): a tool call, an approval, a write on a bot's route, a bot's
-- deletion. NULL: an event of the whole tenant (keys, export, ...) or a row written before bots existed.
ALTER TABLE audit_events ADD COLUMN bot_id text;
