DROP TABLE attribute_names;
--bun:split
DROP TABLE workflow_attributes;
