-- A tenant's dead letters in id order (the console's list, the API's pages, the export) are read from an index on
-- (tenant_id, id): a page costs the tenant's own letters. Before, the lists walked the primary key through every
-- tenant's letters, filtering on the tenant: 892 buffers for an empty page of a tenant with 3 letters beside one with
-- 20,000 (DeadLetterListPlanTest).
CREATE INDEX dead_letters_tenant_id ON dead_letters (tenant_id, id);
-- Every statement runs on a generic plan (V45 says why), which estimates a tenant's letters as the table's rows over
-- the number of tenants: half the table with two tenants. The primary key then looks as good as the tenant's index,
-- since half its rows would pass the filter. A tenant's index cannot be the wrong choice for one tenant's rows;
-- telling the planner that a tenant holds a small share of the table makes it choose the index for every tenant.
ALTER TABLE dead_letters ALTER COLUMN tenant_id SET (n_distinct = -0.05);
ANALYZE dead_letters;
