-- Search attributes: a workflow's own indexed values (strings, numbers, booleans, times), one row
-- per attribute, kept apart from the workflow row so that a start without attributes writes
-- nothing more. Each kind has its own value column and index on (name, value, workflow): a filter
-- on one attribute is an index range scan. Strings compare byte by byte.
CREATE TABLE workflow_attributes (
    workflow_id BIGINT NOT NULL,
    name        TEXT   NOT NULL,
    kind        TEXT   NOT NULL,
    s           TEXT,
    n           REAL,
    t           TEXT,
    PRIMARY KEY (workflow_id, name)
);
CREATE INDEX workflow_attributes_s_idx ON workflow_attributes (name, s, workflow_id) WHERE s IS NOT NULL;
CREATE INDEX workflow_attributes_n_idx ON workflow_attributes (name, n, workflow_id) WHERE n IS NOT NULL;
CREATE INDEX workflow_attributes_t_idx ON workflow_attributes (name, t, workflow_id) WHERE t IS NOT NULL;

-- The kind of each attribute name, fixed by its first use.
CREATE TABLE attribute_names (
    name TEXT PRIMARY KEY,
    kind TEXT NOT NULL
);
