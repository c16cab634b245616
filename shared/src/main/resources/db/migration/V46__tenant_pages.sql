-- A tenant's pages of its dead letters (the console's list, the API's pages, the export) and of its audit events
-- (GET /api/v1/audit, the console) cost the tenant's own rows, however many other tenants keep.
--
-- dead_letters had no index that gives a tenant's letters in id order; audit_events has had one since V9. But every
-- statement runs on a generic plan (V45 says why), which estimates a tenant's rows as the table's rows over the number
-- of tenants: half the table with two. The primary key then looks as good as the tenant's index (half its rows would
-- pass the filter), and the pages walked it through every tenant's rows: 892 buffers for a dead-letter page of a tenant
-- with 3 letters beside one with 20,000, 857 for its audit page (TenantPagesPlanTest). An index on (tenant_id, id)
-- cannot be the wrong choice for one tenant's rows in id order; telling the planner that a tenant holds a small share
-- of the table makes it choose that index for every tenant, large or small.
CREATE INDEX dead_letters_tenant_id ON dead_letters (tenant_id, id);
ALTER TABLE dead_letters ALTER COLUMN tenant_id SET (n_distinct = -0.05);
ALTER TABLE audit_events ALTER COLUMN tenant_id SET (n_distinct = -0.05);
-- The settings take effect at the next ANALYZE; a small sample, so quick on large tables too.
ANALYZE dead_letters;
ANALYZE audit_events;
