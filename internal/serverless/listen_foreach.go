package serverless

import "github.com/cairnflow/cairn/workflow"

// A listen task's foreach processes the events it took, one by one, as a for loop over them: its
// `do` runs for each event (bound to $<item>, its position to $<at>), its data starting as the
// list of events and flowing from one iteration to the next, and the task's output is what the
// last iteration left (then the task's output.as and export.as). The loop is a composite task of
// its own, at <task>/listen/foreach, so its tasks are states like any others.

// compileListenForeach compiles foreach of listen task t into the loop it runs.
func (c *compiler) compileListenForeach(t *task, raw any, sc scope) error {
	ptr := t.path + "/listen/foreach"
	m, ok := raw.(map[string]any)
	if !ok {
		return faultAt(ptr, "foreach is an object with item, at and do")
	}
	for k := range m {
		if k != "item" && k != "at" && k != "do" {
			return faultAt(ptr+"/"+escapePointer(k), "foreach takes item, at and do in cairn, not %q (use the listen task's own output and export)", k)
		}
	}
	if len(frameDataPrefix)+len(ptr) > workflow.MaxKeyLength {
		return faultAt(ptr, "the path of foreach may have at most %d bytes", workflow.MaxKeyLength-len(frameDataPrefix))
	}
	f := &task{name: t.name, path: ptr, kind: kindFor, forEach: "item", forAt: "index",
		then: t.then, outputAs: t.outputAs, outputSchema: t.outputSchema, exportAs: t.exportAs}
	if s, ok := m["item"].(string); ok && s != "" {
		f.forEach = s
	}
	if s, ok := m["at"].(string); ok && s != "" {
		f.forAt = s
	}
	if _, ok := m["do"]; !ok {
		return faultAt(ptr+"/do", "foreach needs do, the tasks that process each event")
	}
	body, err := c.compileList(m["do"], ptr+"/do", f, sc.with(f.forEach, f.forAt))
	if err != nil {
		return err
	}
	f.body = body
	t.listenSpec.foreach = f
	return nil
}

// foreachOf is the loop of a listen task's foreach (nil: none), placed where the task is: once it
// ends, the flow goes on as after the task.
func foreachOf(t *task) *task {
	var f *task
	switch {
	case t.kind == kindListen && t.listenSpec != nil:
		f = t.listenSpec.foreach
	case t.kind == kindAsyncAPI && t.async != nil && t.async.sub != nil:
		f = t.async.sub.foreach
	}
	if f == nil {
		return nil
	}
	f.list, f.index = t.list, t.index
	return f
}

// startForeach runs the foreach loop of listen task t over the events it took.
func (r *run) startForeach(t *task, in any, events []any) target {
	f := foreachOf(t)
	r.st.Data = events
	if len(events) == 0 {
		return r.complete(f, in, events, f.then)
	}
	r.push(frame{Path: f.path, Input: in, Items: events, Count: len(events), Item: events[0]})
	return r.iterate(f)
}
