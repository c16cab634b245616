-- Retention (issue 20): scheduler nodes prune finished work per tenant, oldest first, in small batches. Inbox,
-- usage, audit and dead letters already have a (tenant_id, time) index to find it by; the outbox gets one here. It
-- costs one index entry per reply; without it each pass would read the whole outbox.
CREATE INDEX outbox_tenant_created ON outbox (tenant_id, created_at);
