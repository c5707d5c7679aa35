-- Search attributes: a workflow's own indexed values (strings, numbers, booleans, times), one row
-- per attribute, kept apart from the workflow row so that a start without attributes writes
-- nothing more. Each kind has its own value column and index on (name, value, workflow): a filter
-- on one attribute is an index range scan. Strings compare byte by byte (utf8mb4_bin).
CREATE TABLE workflow_attributes (
    workflow_id BIGINT       NOT NULL,
    name        VARCHAR(64)  NOT NULL,
    kind        VARCHAR(16)  NOT NULL,
    s           VARCHAR(255) NULL,
    n           DOUBLE       NULL,
    t           DATETIME(6)  NULL,
    PRIMARY KEY (workflow_id, name),
    KEY workflow_attributes_s_idx (name, s, workflow_id),
    KEY workflow_attributes_n_idx (name, n, workflow_id),
    KEY workflow_attributes_t_idx (name, t, workflow_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
--bun:split
CREATE TABLE attribute_names (
    name VARCHAR(64) NOT NULL PRIMARY KEY,
    kind VARCHAR(16) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
