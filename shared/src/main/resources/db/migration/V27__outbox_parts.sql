-- A push reply too long for one platform message goes out in parts (issue 15). parts_sent counts the parts already
-- delivered, so a retry (after a failed part, or on another gateway after a crash) starts at the next part and the
-- chat does not see the first parts twice. The split is deterministic: the same text gives the same parts.
ALTER TABLE outbox ADD COLUMN parts_sent integer NOT NULL DEFAULT 0 CHECK (parts_sent >= 0);
