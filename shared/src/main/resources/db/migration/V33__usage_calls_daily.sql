-- Model calls outlive their usage rows (issue 20): a usage row (llm_usage, one per model call) is kept
-- retention.usageDetailDays (35 by default); the retention pass that prunes it adds it, in the same statement, to these
-- sums per UTC day (of the turn's commit), bot, provider, model and key, which are kept as long as usage is
-- (usageRetentionDays, 400 by default). Usage reports and the token quotas read the rows still there and these.
-- provider and key_id are '' for none. turns counts each turn once, on its first call: a turn's calls are written by
-- one commit and pruned by one batch, so a turn is either all rows or all sums. cost_micros sums the priced calls,
-- NULL when none was; unpriced counts the others. A bot's deletion keeps them, as it keeps the usage rows.
CREATE TABLE usage_calls_daily (
    tenant_id      text   NOT NULL,
    day            date   NOT NULL,
    bot_id         text   NOT NULL,
    provider       text   NOT NULL,
    model          text   NOT NULL,
    key_id         text   NOT NULL,
    calls          bigint NOT NULL CHECK (calls > 0),
    turns          bigint NOT NULL CHECK (turns >= 0),
    input_tokens   bigint NOT NULL,
    output_tokens  bigint NOT NULL,
    cached_tokens  bigint NOT NULL,
    cost_micros    bigint,
    unpriced       bigint NOT NULL CHECK (unpriced >= 0),
    PRIMARY KEY (tenant_id, day, bot_id, provider, model, key_id)
);
