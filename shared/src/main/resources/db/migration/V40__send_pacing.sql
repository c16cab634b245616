-- Send pacing shared by every gateway (issue 15): a platform's rates (a chat's, an account's) hold for the cluster, not
-- per gateway. Each row is the theoretical arrival time of the next send (GCRA) of one account ('' scope) or of one of its
-- chats; a send reserves its slot in both with one call of clawfleet_pace, which says how long to wait (or -1: longer
-- than the caller may wait, and nothing is reserved). Rows of chats quiet for 10 minutes are pruned.
CREATE TABLE channel_send_pacing (
    account_id  bigint NOT NULL REFERENCES channel_bots (id) ON DELETE CASCADE,
    tenant_id   text NOT NULL,
    scope       text NOT NULL,
    tat         timestamptz NOT NULL,
    PRIMARY KEY (account_id, scope)
);
CREATE INDEX channel_send_pacing_tat ON channel_send_pacing (tat);

-- p_*_ms: the interval between two sends at the steady rate; p_*_burst: how many may go at once.
CREATE FUNCTION clawfleet_pace(p_account bigint, p_tenant text, p_chat text, p_chat_ms double precision, p_chat_burst integer,
                               p_account_ms double precision, p_account_burst integer, p_max_wait_ms double precision)
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
