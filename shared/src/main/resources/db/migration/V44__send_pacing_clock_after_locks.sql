-- clawfleet_pace (V40) read the clock before it took its row locks. A call that waited on another's lock then measured
-- its wait from before that wait: it told its caller to wait longer than the rate asks (never shorter, so no rate was
-- broken), by as long as it had waited on the lock. SendPacingStoreTest caught it as a 152 ms gap between two sends an
-- account's 100 ms apart. The clock is now read again once both rows are locked, so each wait is measured from the
-- moment the slot is taken; the first insert of a row still uses the time the call began.
CREATE OR REPLACE FUNCTION clawfleet_pace(p_account bigint, p_tenant text, p_chat text, p_chat_ms double precision,
                                          p_chat_burst integer, p_account_ms double precision, p_account_burst integer,
                                          p_max_wait_ms double precision)
    RETURNS double precision LANGUAGE plpgsql AS $$
DECLARE
    now_ts   timestamptz := clock_timestamp();
    chat_tat timestamptz;
    acct_tat timestamptz;
    chat_new timestamptz;
    acct_new timestamptz;
    wait_ms  double precision;
BEGIN
    INSERT INTO channel_send_pacing (account_id, tenant_id, scope, tat)
    VALUES (p_account, p_tenant, p_chat, now_ts), (p_account, p_tenant, '', now_ts)
    ON CONFLICT (account_id, scope) DO NOTHING;
    -- the chat's row, then the account's: every caller locks in this order
    SELECT tat INTO chat_tat FROM channel_send_pacing WHERE account_id = p_account AND scope = p_chat FOR UPDATE;
    SELECT tat INTO acct_tat FROM channel_send_pacing WHERE account_id = p_account AND scope = '' FOR UPDATE;
    now_ts := clock_timestamp();
    chat_new := greatest(chat_tat, now_ts) + p_chat_ms * interval '1 millisecond';
    acct_new := greatest(acct_tat, now_ts) + p_account_ms * interval '1 millisecond';
    wait_ms := greatest(0::double precision,
                        extract(epoch FROM chat_new - now_ts) * 1000 - p_chat_burst * p_chat_ms,
                        extract(epoch FROM acct_new - now_ts) * 1000 - p_account_burst * p_account_ms);
    IF wait_ms > p_max_wait_ms THEN
        RETURN -1;
    END IF;
    UPDATE channel_send_pacing SET tat = CASE WHEN scope = '' THEN acct_new ELSE chat_new END
     WHERE account_id = p_account AND scope IN (p_chat, '');
    RETURN wait_ms;
END
$$;
