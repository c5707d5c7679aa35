-- The audit log: operator acts that are not on one workflow (or that remove one with its history):
-- bulk operations, deletes, reruns, deploys and release states, schedule changes, tokens made and
-- revoked. Who (actor), what (action, subject), why (reason) and when (at).
CREATE TABLE audit_log (
    id      BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    at      DATETIME(6)  NOT NULL,
    actor   VARCHAR(255) NOT NULL,
    action  VARCHAR(255) NOT NULL,
    subject VARCHAR(255) NULL,
    reason  TEXT         NULL,
    details LONGTEXT     NULL,
    KEY audit_log_actor_idx (actor, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
