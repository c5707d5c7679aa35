package serverless

import (
	"fmt"

	"github.com/cairnflow/cairn/workflow"
)

// A run's frames are stored in two parts: the variable "frames" holds the small, changing part
// of each (a loop's index and item, a try's retries), and one variable per frame, "frame:<path>",
// holds its input and a for's items, written once when the frame is entered and removed when it is
// left. So an iteration of a loop over a large collection stores its index and item (and the data
// it changed), not the collection again: each stored change is an action's variable row, kept for
// the workflow's history.

// frameDataPrefix names the variable of a frame's input and items; a task's path is at most
// MaxKeyLength-len(awaitSuffix) bytes, so the key fits.
const frameDataPrefix = "frame:"

// rootPath is the path of the document itself, whose frame is the first.
const rootPath = ""

// frameData is the part of a frame stored once.
type frameData struct {
	Input    any   `json:"input"`
	Items    []any `json:"items,omitempty"`
	RawInput any   `json:"rawInput,omitempty"`
}

// storedFrame reads a frame as it was stored: also in the form of earlier versions, with its
// input and items inline (workflows that were running when cairn was upgraded).
type storedFrame struct {
	frame
	Input any   `json:"input,omitempty"`
	Items []any `json:"items,omitempty"`
}

// restore turns stored frames into a run's frames. An inline input or items (the earlier form)
// is kept and marked to be stored apart.
func restore(stored []storedFrame) []frame {
	out := make([]frame, len(stored))
	for i, s := range stored {
		f := s.frame
		if s.Input != nil || s.Items != nil {
			f.Input, f.Items, f.entered = s.Input, s.Items, true
			if f.Count == 0 && len(s.Items) > 0 {
				f.Count = len(s.Items)
				if f.Index < len(s.Items) {
					f.Item = s.Items[f.Index]
				}
			}
		}
		out[i] = f
	}
	return out
}

// loadFrames reads the frames and each frame's stored part. It returns the keys of the parts
// it found, which save removes once their frame is left.
func loadFrames(sc workflow.StepContext, input any) ([]frame, map[string]bool, error) {
	var stored []storedFrame
	if _, err := sc.Var(varFrames, &stored); err != nil {
		return nil, nil, err
	}
	frames := restore(stored)
	keys := map[string]bool{}
	for i := range frames {
		f := &frames[i]
		if f.entered {
			continue
		}
		if f.Path == rootPath {
			f.Input = input // the document's frame: its input is the workflow's, stored as such
			continue
		}
		var d frameData
		had, err := sc.Var(frameDataPrefix+f.Path, &d)
		if err != nil {
			return nil, nil, err
		}
		if had {
			f.Input, f.Items, f.RawInput = d.Input, d.Items, d.RawInput
			keys[frameDataPrefix+f.Path] = true
		}
	}
	return frames, keys, nil
}

// saveFrames writes the frames: the stored part of each frame entered by this step, and the
// removal of the parts of frames left.
func (r *run) saveFrames(sc workflow.StepContext) error {
	if err := setChanged(sc, varFrames, r.st.Frames); err != nil {
		return err
	}
	live := map[string]bool{}
	for _, f := range r.st.Frames {
		key := frameDataPrefix + f.Path
		live[key] = true
		if f.entered && f.Path != rootPath {
			if err := setChanged(sc, key, frameData{Input: f.Input, Items: f.Items, RawInput: f.RawInput}); err != nil {
				return err
			}
		}
	}
	for key := range r.frameKeys {
		if !live[key] {
			if err := sc.SetVar(key, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// align makes the frames those of the composite tasks around task t before t runs. They are
// unless an operator moved the workflow (retryWorkflow or updateWorkflow with a state): the frames
// are then those of the task that ran last, perhaps none (a document that faulted in its output).
// The frames t shares with them are kept; the others are entered afresh with the current data,
// as the flow would have entered them.
func (r *run) align(t *task) *Problem {
	var around []*task // the composite tasks around t, innermost first
	var catching []bool
	for l := t.list; l != nil && l.owner != nil; l = l.owner.list {
		around = append(around, l.owner)
		catching = append(catching, l.catch)
	}
	// An extension's task runs above the frames of the task it extends: from its excursion's frame.
	base := r.extensionBase(t)
	if base < 0 {
		return lostExtension(t)
	}
	keep := 0
	for keep < len(around) && base+keep < len(r.st.Frames) {
		owner, f := around[len(around)-1-keep], r.st.Frames[base+keep]
		if f.Path != owner.path || f.Catching != catching[len(around)-1-keep] {
			break
		}
		keep++
	}
	if keep == len(around) && base+keep == len(r.st.Frames) {
		return nil
	}
	// What the task that ran last waited for is not t's: t's own timeout starts now.
	r.st.TaskDeadline, r.st.WaitUntil, r.st.Listen = startDeadline(r.now, t.timeout), nil, nil
	r.st.Frames = r.st.Frames[:base+keep]
	for i := len(around) - 1 - keep; i >= 0; i-- {
		owner := around[i]
		f := frame{Path: owner.path, Input: r.st.Data, Deadline: startDeadline(r.now, owner.timeout), Catching: catching[i]}
		if r.prog.usesTask {
			f.Started = r.now
		}
		switch owner.kind {
		case kindRoot:
			f.Input = r.st.Input
		case kindTry:
			f.Started = r.now
		case kindFor:
			v, p := r.evalTpl(owner, &template{expr: owner.forIn}, r.st.Data, nil)
			if p != nil {
				return p
			}
			items, isList := v.([]any)
			if !isList && v != nil {
				return &Problem{Type: errTypeExpression, Status: 400, Title: "Expression Error", Detail: fmt.Sprintf("for.in gave %T, not a list", v), Instance: owner.path + "/for/in"}
			}
			f.Items, f.Count = items, len(items)
			if len(items) > 0 {
				f.Item = items[0]
			}
		}
		r.push(f)
	}
	return nil
}

// branchFrames are the frames a branch child gets from its parent: their small part, which is
// all a branch reads of them (it never leaves the fork).
func branchFrames(frames []frame) []storedFrame {
	out := make([]storedFrame, len(frames))
	for i, f := range frames {
		f.entered = false
		out[i] = storedFrame{frame: f}
	}
	return out
}
