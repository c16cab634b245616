-- Cluster-wide message rates per tenant (issue 14, its first limit: messagesPerMinute). Gateways lease the tokens of
-- a minute window from here in small chunks and spend them locally; granted never passes the limit, so a tenant
-- gets at most its limit per window whatever the number of gateways. Old windows are dropped by the gateways.
CREATE TABLE tenant_rate_windows (
    tenant_id     text NOT NULL,
    window_start  timestamptz NOT NULL,
    granted       integer NOT NULL CHECK (granted >= 0),
    -- what the last lease was given: the lease's answer (an UPDATE's SET sees the row as it was before)
    last_grant    integer NOT NULL,
    PRIMARY KEY (tenant_id, window_start)
);
