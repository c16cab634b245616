-- pgbench script for clawfleet_pace (V40): one send's reservation in a chat's and its account's rate.
-- pgbench -n -f docs/bench/send-pacing.sql -D acct=<a channel_bots id> -c C -j C -T 20 <database>
-- Rates are set so high that nothing waits: the statement's cost alone, with every client on one account's row.
\set chat random(1, 1000)
SELECT clawfleet_pace(:acct, 'bench', 'c' || :chat, 0.01, 1000000, 0.01, 1000000, 5000);
