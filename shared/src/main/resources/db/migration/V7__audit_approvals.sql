-- A call that waits for the chat's approval is audited when it starts waiting (seed 001
-- bc_approval: approval_requested); /no is a 'denied' row, an approved call its usual row.
ALTER TABLE audit_events DROP CONSTRAINT audit_events_outcome_check;
ALTER TABLE audit_events ADD CONSTRAINT audit_events_outcome_check
    CHECK (outcome IN ('success', 'denied', 'error', 'invalid_args', 'approval_requested'));
