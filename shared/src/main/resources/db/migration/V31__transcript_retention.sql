-- Transcript retention (issue 20): scheduler nodes prune a tenant's chat history past retention.transcriptDays (or
-- the tenant's transcriptRetentionDays), oldest first, in small batches, as they prune the inbox and the outbox. The
-- batch finds the tenant's oldest messages by this index; without it each pass would read the whole table. It costs
-- one index entry per history row written.
CREATE INDEX messages_tenant_created ON messages (tenant_id, created_at);
