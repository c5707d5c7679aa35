package engine

import (
	"encoding/json"
	"fmt"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// SetAttribute sets a search attribute of the running workflow (nil removes it), written with the
// step's outcome. The value is checked as the API checks it, against the kind of its name.
func (c *stepContext) SetAttribute(name string, v any) error {
	if err := workflow.CheckAttributeName("attributes."+name, name); err != nil {
		return err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return invalid("attributes."+name, "attribute %q: %v", name, err)
	}
	obj, err := json.Marshal(map[string]json.RawMessage{name: raw})
	if err != nil {
		return err
	}
	values, err := c.engine.resolveAttributes(c, "attributes", obj, true)
	if err != nil {
		return err
	}
	if c.attrNames == nil {
		rows, err := c.engine.store.WorkflowAttributeList(c, []int64{c.workflow.ID})
		if err != nil {
			return fmt.Errorf("error reading the workflow's attributes: %w", err)
		}
		c.attrNames = map[string]bool{}
		for _, r := range rows {
			c.attrNames[r.Name] = true
		}
	}
	if c.attrs == nil {
		c.attrs = map[string]*persistence.AttributeValue{}
	}
	value := values[name]
	if value != nil && !c.attrNames[name] && len(c.attrNames) >= workflow.MaxAttributes {
		return invalid("attributes."+name, "a workflow has at most %d attributes", workflow.MaxAttributes)
	}
	c.attrs[name] = value
	c.attrNames[name] = value != nil
	if value == nil {
		delete(c.attrNames, name)
	}
	return nil
}
