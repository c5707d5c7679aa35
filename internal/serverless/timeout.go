package serverless

import (
	"fmt"
	"time"

	"github.com/cairnflow/cairn/workflow"
)

// Timeouts are deadlines kept with the workflow's data, never sleeping goroutines: a composite
// task's (and the workflow's) in its frame, a task's own in the data. Each step checks them before
// it runs; a step that waits (wait, listen, a child workflow) is woken at the nearest one; an
// HTTP call is bounded by it. A timeout faults the task that timed out with the DSL's timeout
// error (status 408), which the try tasks around it may catch; the workflow's own faults it.

// compileTimeout reads a task's or the document's timeout: {after: duration}, or the name of one
// in use.timeouts.
func (c *compiler) compileTimeout(raw any, ptr string) (time.Duration, error) {
	if ref, ok := raw.(string); ok {
		def, ok := c.timeouts[ref]
		if !ok {
			return 0, faultAt(ptr, "timeout %q is not defined in use.timeouts", ref)
		}
		raw, ptr = def, "/use/timeouts/"+escapePointer(ref)
	}
	m, ok := raw.(map[string]any)
	if !ok || m["after"] == nil {
		return 0, faultAt(ptr, "a timeout must be an object with after (a duration), or the name of one in use.timeouts")
	}
	d, err := parseDuration(m["after"], ptr+"/after")
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, faultAt(ptr+"/after", "a timeout must be longer than zero")
	}
	return d, nil
}

func timeoutProblem(t *task) *Problem {
	what, instance := "task "+t.name, t.path
	if t.kind == kindRoot {
		what, instance = "the workflow", "/"
	}
	return &Problem{Type: errTypeTimeout, Status: 408, Title: "Timeout",
		Detail: fmt.Sprintf("%s did not complete within %s", what, t.timeout), Instance: instance}
}

// deadline is the nearest deadline of the current task: its own, or one of the tasks around it.
func (r *run) deadline() *time.Time {
	d := r.st.TaskDeadline
	for _, f := range r.st.Frames {
		if f.Deadline != nil && (d == nil || f.Deadline.Before(*d)) {
			d = f.Deadline
		}
	}
	return d
}

// timedOut faults the outermost task whose deadline has passed at now (the workflow, a composite
// task around task t, or t itself): false when none has.
func (r *run) timedOut(t *task, now time.Time) (target, bool) {
	forkFrame := -1
	if r.st.Branch != nil {
		for i, f := range r.st.Frames {
			if owner := r.prog.byPath[f.Path]; owner != nil && owner.kind == kindFork {
				forkFrame = i
			}
		}
	}
	for i, f := range r.st.Frames {
		if f.Deadline == nil || now.Before(*f.Deadline) {
			continue
		}
		owner := r.prog.byPath[f.Path]
		if owner == nil {
			continue
		}
		p := timeoutProblem(owner)
		if owner.kind == kindRoot || i <= forkFrame {
			// The workflow timed out, or (in a branch) the fork or a task around it: the fault
			// is the parent's to handle.
			return target{fault: p}, true
		}
		r.st.Frames, r.st.Data = r.st.Frames[:i], f.Input
		r.st.TaskDeadline, r.st.WaitUntil = nil, nil
		return r.fault(owner, p), true
	}
	if d := r.st.TaskDeadline; d != nil && !now.Before(*d) {
		r.st.TaskDeadline, r.st.WaitUntil = nil, nil
		return r.fault(t, timeoutProblem(t)), true
	}
	return target{}, false
}

// startDeadline is a deadline that starts at from, nil without a timeout.
func startDeadline(from time.Time, timeout time.Duration) *time.Time {
	if timeout <= 0 {
		return nil
	}
	d := from.Add(timeout)
	return &d
}

// cancelAwaited cancels the children a task waited for when it timed out (they would run on for
// nothing), with the step that records the timeout.
func (r *run) cancelAwaited(sc workflow.StepContext, t *task) error {
	n := 1
	if t.kind == kindFork {
		n = len(t.body.tasks)
	}
	children, err := sc.Reader().Children(sc, sc.WorkflowID(), n)
	if err != nil {
		return fmt.Errorf("error listing the children to cancel: %w", err)
	}
	for _, c := range children {
		if c.Status.Terminal() {
			continue
		}
		if err := sc.CancelWorkflow(workflow.CancelRequest{ID: c.ID, Reason: "the task that waited for it timed out"}); err != nil {
			return fmt.Errorf("error cancelling child %d: %w", c.ID, err)
		}
	}
	return nil
}
