-- Flow control: a workflow's concurrency key, the limits set at run time (they win over a
-- definition's), one row per flow-controlled type that its claims lock in turn, and the rate
-- limits' theoretical arrival times (GCRA) per type and key.
ALTER TABLE workflows ADD COLUMN concurrency_key VARCHAR(191) NULL;
--bun:split
-- The holders and waiters of a type's keys.
CREATE INDEX workflows_flow_idx ON workflows (type, concurrency_key, status);
--bun:split
CREATE TABLE flow_controls (
    type     VARCHAR(255) NOT NULL PRIMARY KEY,
    settings LONGTEXT     NOT NULL,
    updated  DATETIME(6)  NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
CREATE TABLE flow_locks (
    type VARCHAR(255) NOT NULL PRIMARY KEY
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
CREATE TABLE flow_rates (
    type     VARCHAR(255) NOT NULL,
    rate_key VARCHAR(191) NOT NULL,
    tat      DATETIME(6)  NOT NULL,
    PRIMARY KEY (type, rate_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
