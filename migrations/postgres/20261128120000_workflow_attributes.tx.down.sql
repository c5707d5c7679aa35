DROP TABLE attribute_names;
DROP TABLE workflow_attributes;
