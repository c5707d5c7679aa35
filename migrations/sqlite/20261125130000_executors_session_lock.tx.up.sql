-- Whether an executor holds a database session lock for as long as its process lives: the other
-- nodes then declare it dead as soon as its session ends (a killed process), not only when its
-- heartbeat expires.
ALTER TABLE executors ADD COLUMN session_lock BOOLEAN NOT NULL DEFAULT 0;
