-- Dead letters not replayed, per tenant and kind: the scheduler nodes' fleet gauges count them every 15 s
-- (clawfleet_dead_letters_open), reading this index only, however many replayed letters the table keeps.
CREATE INDEX dead_letters_open ON dead_letters (tenant_id, kind) WHERE replayed_at IS NULL;
