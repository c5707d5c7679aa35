-- The audit log: operator acts that are not on one workflow (or that remove one with its history):
-- bulk operations, deletes, reruns, deploys and release states, schedule changes, tokens made and
-- revoked. Who (actor), what (action, subject), why (reason) and when (at).
CREATE TABLE audit_log (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      TEXT        NOT NULL,
    actor   TEXT        NOT NULL,
    action  TEXT        NOT NULL,
    subject TEXT,
    reason  TEXT,
    details TEXT
);
-- Newest first, by actor.
CREATE INDEX audit_log_actor_idx ON audit_log (actor, id);
