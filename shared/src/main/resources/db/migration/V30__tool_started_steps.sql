-- Side effects on takeover (issue 20): a call to a tool that changes things is marked in the execution ledger
-- ('tool_started') before it runs. A next owner that finds the mark without the call's result knows the call may
-- have had its effect and does not run it again. turn_steps only holds the steps of turns in progress: small.
ALTER TABLE turn_steps DROP CONSTRAINT turn_steps_kind_check;
ALTER TABLE turn_steps ADD CONSTRAINT turn_steps_kind_check CHECK (kind IN ('model', 'tool', 'tool_started'));
