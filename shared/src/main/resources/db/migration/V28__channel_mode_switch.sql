-- A mode switch calls the platform (setWebhook with a new secret) and then records the secret's digest. Two switches
-- of one account at once, on one gateway or two, could reach the platform in one order and the database in the
-- other, leaving the platform sending a secret the database no longer knows: every webhook post refused. A switch
-- first claims the account until mode_switch_until (a short lease, so a gateway that dies mid-switch blocks nothing
-- for long); a second switch meanwhile is refused with 409 and changes nothing (issue 15).
ALTER TABLE channel_bots ADD COLUMN mode_switch_until timestamptz;
