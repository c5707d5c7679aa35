-- A poll reads each of its functions' oldest pending tasks in (created, id) order, an order the
-- primary key cannot give: read by ID, statistics taken while a burst of tasks was all pending let
-- the planner walk the primary key over every task leased since, a longer walk at each lease.
DROP INDEX remote_tasks_pending_idx;
CREATE INDEX remote_tasks_pending_idx ON remote_tasks (function, created, id) WHERE status = 'PENDING';
