-- Approvals that mean something (issue 22): a waiting call has a public id, the hash of exactly
-- what it would run, an expiry, who asked, and, once an admin decided, the decision and who made it.
-- The chat that asked never decides (enforced by ApprovalStore: the decider's chat must differ).
ALTER TABLE pending_approvals
    ADD COLUMN approval_id  text,
    ADD COLUMN args_hash    text,
    ADD COLUMN requested_by text,
    ADD COLUMN expires_at   timestamptz,
    ADD COLUMN decision     text CHECK (decision IN ('approve', 'deny', 'always')),
    ADD COLUMN decided_by   text,
    ADD COLUMN decided_at   timestamptz;
-- Calls that waited before this version were answered by their own chat's /yes: they expire now.
UPDATE pending_approvals SET approval_id = 'legacy-' || chat_id, args_hash = '', requested_by = '',
                             expires_at = now();
ALTER TABLE pending_approvals
    ALTER COLUMN approval_id SET NOT NULL,
    ALTER COLUMN args_hash SET NOT NULL,
    ALTER COLUMN requested_by SET NOT NULL,
    ALTER COLUMN expires_at SET NOT NULL;
CREATE UNIQUE INDEX pending_approvals_by_id ON pending_approvals (tenant_id, approval_id);

-- An admin's decision enters the asking chat's inbox as a message of its own kind, so the chat's
-- owner carries the turn on in order, on whichever worker holds the partition.
ALTER TABLE inbox DROP CONSTRAINT inbox_kind_check;
ALTER TABLE inbox ADD CONSTRAINT inbox_kind_check CHECK (kind IN ('user', 'task', 'approval'));

-- In a group chat admin is a property of the sender, not of the whole group: the senders of a chat
-- who act as admins. A chat with the admin role and no rows here is admin for every sender, which
-- is allowed only where the chat is one person's (see ChatStore.isAdmin).
CREATE TABLE chat_admins (
    chat_id    bigint NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
    tenant_id  text   NOT NULL,
    sender_id  text   NOT NULL,
    granted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (chat_id, sender_id)
);

-- The chat bootstrap key went away (admin grant from the CLI or API instead): its table goes too.
DROP TABLE admin_bootstrap;
