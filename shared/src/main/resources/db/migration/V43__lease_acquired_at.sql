-- When each partition's lease was last taken (a claim, which also raises the epoch): the operator console lists the
-- recent rebalances from it. No default, so adding it rewrites nothing; null until the partition's next claim.
ALTER TABLE partition_leases ADD COLUMN acquired_at timestamptz;
