-- Concurrent turns per tenant, cluster-wide (issue 14, limit concurrentTurns). A worker holds some of a tenant's turn
-- slots under a lease that it renews; the slots of a tenant's unexpired leases never add up to more than its limit.
-- A worker that dies holds its slots until its lease expires. One row per tenant and holder (a worker's node id and
-- run: a restarted worker is a new holder, and its old row expires).
CREATE TABLE tenant_turn_slots (
    tenant_id     text        NOT NULL REFERENCES tenants (id),
    holder        text        NOT NULL,
    -- slots the holder may use or uses now (never fewer than its turns under way)
    slots         integer     NOT NULL CHECK (slots >= 0),
    -- slots it asked for and did not get, and since when it has been short of them: others keep room for the
    -- longest-waiting holders' fair shares, so no worker starves another of the tenant's slots
    unmet         integer     NOT NULL DEFAULT 0 CHECK (unmet >= 0),
    waiting_since timestamptz,
    expires_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, holder)
);
CREATE INDEX tenant_turn_slots_holder ON tenant_turn_slots (holder);

-- A holder with p_in_use turns of the tenant under way asks to hold p_want slots (p_want > p_in_use). It gets as many
-- as the limit leaves beside the other holders' unexpired leases, less the room kept for holders that have waited
-- longer than it for their fair share (ceil(limit / holders); a holder that has its share under way counts as having
-- waited least); its row then holds max(granted, p_in_use), and what
-- it did not get is recorded as unmet. Returns the slots granted, or null when the tenant has no such limit (or does
-- not exist): then nothing is written. The lock on the tenant's row makes the takers of a tenant wait for each other;
-- each statement of a plpgsql function sees what committed before it, so the sums read after the lock are current
-- (one statement with the lock in a CTE would read them as of before its wait).
CREATE FUNCTION take_turn_slots(p_tenant text, p_holder text, p_in_use integer, p_want integer, p_ttl_ms integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    lim      integer;
    now_     timestamptz;
    since    timestamptz;
    holders  integer;
    share    integer;
    others   integer;
    reserved integer;
    granted  integer;
BEGIN
    SELECT (limits ->> 'concurrentTurns')::integer INTO lim FROM tenants WHERE id = p_tenant FOR NO KEY UPDATE;
    IF lim IS NULL THEN
        DELETE FROM tenant_turn_slots WHERE tenant_id = p_tenant AND holder = p_holder;
        RETURN NULL;
    END IF;
    now_ := clock_timestamp();
    DELETE FROM tenant_turn_slots WHERE tenant_id = p_tenant AND expires_at <= now_;
    SELECT waiting_since INTO since FROM tenant_turn_slots WHERE tenant_id = p_tenant AND holder = p_holder;
    SELECT 1 + count(*), coalesce(sum(slots), 0) INTO holders, others
      FROM tenant_turn_slots WHERE tenant_id = p_tenant AND holder <> p_holder AND (slots > 0 OR unmet > 0);
    share := ceil(lim::numeric / holders)::integer;
    -- a holder that has its fair share under way waits behind everyone short of theirs
    IF p_in_use >= share THEN
        since := 'infinity';
    END IF;
    SELECT coalesce(sum(least(unmet, greatest(0, share - slots))), 0) INTO reserved
      FROM tenant_turn_slots
     WHERE tenant_id = p_tenant AND holder <> p_holder AND unmet > 0 AND waiting_since < coalesce(since, now_);
    granted := greatest(0, least(p_want, lim - others - reserved));
    INSERT INTO tenant_turn_slots AS s (tenant_id, holder, slots, unmet, waiting_since, expires_at)
    VALUES (p_tenant, p_holder, greatest(granted, p_in_use), greatest(0, p_want - granted),
            CASE WHEN granted < p_want THEN now_ END, now_ + p_ttl_ms * interval '1 millisecond')
    ON CONFLICT (tenant_id, holder) DO UPDATE
       SET slots = excluded.slots, unmet = excluded.unmet, expires_at = excluded.expires_at,
           waiting_since = CASE WHEN excluded.unmet > 0 THEN coalesce(s.waiting_since, now_) END;
    RETURN granted;
END $$;
