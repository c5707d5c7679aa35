package serverless

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// A fork runs each branch as a child workflow of the same definition version: the child starts
// at the branch's task instead of the document's first one, and ends when the branch does. The
// parent waits in the state <fork>/await for every child to end. So a branch survives the node
// that runs it like any workflow, and history, pause and cancel see each branch.

// forkKey is the key of a branch child's input that says which branch it runs.
const forkKey = "cairn.fork"

// forkWonSignal names the signal by which the first branch of a competing fork to finish claims
// the win: delivered once per fork (its idempotency key is the fork's token) with the step that
// ends the branch, so exactly one branch wins even when several finish at the same moment, and
// the parent reads the winner from it.
const forkWonSignal = "cairn.fork.won"

// forkWon is the payload of a forkWonSignal.
type forkWon struct {
	Token  string `json:"token"`
	Branch int    `json:"branch"`
}

// forkWonKey is the idempotency key of the forkWonSignal of one run of a fork.
func forkWonKey(token string) string { return "fork/" + token }

// branchStart is what a branch child gets from its parent: where the branch is, and the parent's
// data the branch's expressions see.
type branchStart struct {
	Fork          string        `json:"fork"` // the fork task's path
	Branch        int           `json:"branch"`
	Token         string        `json:"token"` // one per run of the fork task
	Compete       bool          `json:"compete,omitempty"`
	Input         any           `json:"input"` // the fork task's input
	Context       any           `json:"context"`
	WorkflowInput any           `json:"workflowInput"`
	Frames        []storedFrame `json:"frames"`
	// Deadline is when the fork task times out.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Workflow is the parent's $workflow (id, raw input, start): a branch is part of its run.
	Workflow *workflowDesc `json:"workflow,omitempty"`
}

// branchRef is what a branch child keeps to finish its branch.
type branchRef struct {
	Fork    string `json:"fork"`
	Branch  int    `json:"branch"`
	Token   string `json:"token"`
	Compete bool   `json:"compete,omitempty"`
	// Won was set by earlier versions on the branch that claimed the win; the forkWonSignal
	// says so now. Read for the forks that were running when they were replaced.
	Won bool `json:"won,omitempty"`
}

// forkSpec is a compiled fork.
type forkSpec struct {
	compete bool
}

func (c *compiler) compileFork(t *task, def map[string]any, sc scope) error {
	t.kind = kindFork
	spec, ok := def["fork"].(map[string]any)
	if !ok {
		return faultAt(t.path+"/fork", "fork must be an object with branches")
	}
	t.fork = &forkSpec{}
	if v, ok := spec["compete"]; ok {
		b, isBool := v.(bool)
		if !isBool {
			return faultAt(t.path+"/fork/compete", "compete must be true or false")
		}
		t.fork.compete = b
	}
	var err error
	if t.body, err = c.compileList(spec["branches"], t.path+"/fork/branches", t, sc); err != nil {
		return err
	}
	t.body.fork = true
	for _, b := range t.body.tasks {
		if !branchDirective(b.then) {
			return faultAt(b.path+"/then", "a branch of a fork runs on its own: its then may only be continue, exit or end")
		}
		for i, cs := range b.cases {
			if !branchDirective(cs.then) {
				return faultAt(fmt.Sprintf("%s/switch/%d/%s/then", b.path, i, escapePointer(cs.name)),
					"a branch of a fork runs on its own: its then may only be continue, exit or end")
			}
		}
	}
	return nil
}

// startBranches starts one child per branch of fork task t, created when the step completes.
func (r *run) startBranches(sc workflow.StepContext, t *task, in any) *Problem {
	token := newEventID()
	for i := range t.body.tasks {
		b, err := json.Marshal(map[string]any{forkKey: branchStart{Fork: t.path, Branch: i, Token: token, Compete: t.fork.compete,
			Input: r.prog.redact.value(in), Context: r.st.Context, WorkflowInput: r.st.Input, Frames: branchFrames(r.st.Frames), Deadline: r.st.TaskDeadline,
			Workflow: r.branchWorkflow()}})
		if err != nil {
			return &Problem{Type: errTypeRuntime, Status: 500, Title: "Cannot Fork", Detail: err.Error(), Instance: t.path}
		}
		sc.StartChild(workflow.ChildRequest{Type: r.prog.typ, Version: sc.Workflow().DefinitionVersion, Input: b,
			BusinessKey: t.body.tasks[i].path})
	}
	return nil
}

// branchOf reads the branch a child runs from its input (nil for a workflow that is no branch).
func branchOf(w *persistence.Workflow, input any) *branchStart {
	if w.ParentID == nil {
		return nil
	}
	m, ok := input.(map[string]any)
	if !ok || m[forkKey] == nil {
		return nil
	}
	raw, err := json.Marshal(m[forkKey])
	if err != nil {
		return nil
	}
	var b branchStart
	if json.Unmarshal(raw, &b) != nil {
		return nil
	}
	return &b
}

// startBranch begins a branch child: the parent's data around the fork, then the branch's task.
func (r *run) startBranch(b *branchStart) target {
	fork := r.prog.byPath[b.Fork]
	if fork == nil || fork.kind != kindFork || b.Branch < 0 || b.Branch >= len(fork.body.tasks) {
		return target{fault: &Problem{Type: errTypeRuntime, Status: 500, Title: "Unknown Branch", Detail: fmt.Sprintf("no branch %d of a fork at %s", b.Branch, b.Fork)}}
	}
	r.st.Input, r.st.Context, r.st.Data = b.WorkflowInput, b.Context, b.Input
	r.st.Frames = restore(b.Frames)
	r.push(frame{Path: fork.path, Input: b.Input, Deadline: b.Deadline})
	r.st.Branch = &branchRef{Fork: b.Fork, Branch: b.Branch, Token: b.Token, Compete: b.Compete}
	return r.enter(fork.body.tasks[b.Branch])
}

// endBranch ends a branch child with the branch's output.
func (r *run) endBranch() target {
	for i := len(r.st.Frames) - 1; i >= 0; i-- {
		if owner := r.prog.byPath[r.st.Frames[i].Path]; owner != nil && owner.kind == kindFork {
			r.st.Frames = r.st.Frames[:i+1]
			break
		}
	}
	r.st.Output = r.st.Data
	return target{end: true}
}

// claimWin is run by a branch of a competing fork that finished: it sends its parent the claim
// to the win, which cancels the other branches when it is delivered, with the step that ends
// the branch. The first branch whose claim is delivered wins; a branch that lost finishes all
// the same, and its parent ignores its output.
func (r *run) claimWin(sc workflow.StepContext) error {
	br := r.st.Branch
	parent := sc.Workflow().ParentID
	if br == nil || !br.Compete || parent == nil {
		return nil
	}
	siblings, _, err := r.branchChildren(sc, *parent, br.Fork, br.Token)
	if err != nil {
		return err
	}
	var losers []workflow.CancelRequest
	for _, s := range siblings {
		if s.w.ID != sc.WorkflowID() && !s.w.Status.Terminal() {
			losers = append(losers, workflow.CancelRequest{ID: s.w.ID, Reason: "another branch of the competing fork finished first"})
		}
	}
	payload, err := json.Marshal(forkWon{Token: br.Token, Branch: br.Branch})
	if err != nil {
		return err
	}
	if err := sc.SendSignal(workflow.SignalRequest{ID: *parent, Name: forkWonSignal, Payload: payload,
		IdempotencyKey: forkWonKey(br.Token), Cancels: losers}); err != nil {
		return fmt.Errorf("error claiming the fork's win: %w", err)
	}
	return nil
}

type branchChild struct {
	w      *persistence.Workflow
	branch int
}

// branchChildren lists the children of one run of a fork (by its token; "" for the newest run),
// in branch order, and the run's token.
func (r *run) branchChildren(sc workflow.StepContext, parent int64, fork, token string) ([]branchChild, string, error) {
	t := r.prog.byPath[fork]
	if t == nil || t.kind != kindFork {
		return nil, "", fmt.Errorf("no fork at %s", fork)
	}
	// The children of one run of the fork are the parent's newest: it starts nothing while it waits.
	ws, err := sc.Reader().Children(sc, parent, len(t.body.tasks))
	if err != nil {
		return nil, "", fmt.Errorf("error listing the fork's branches: %w", err)
	}
	var out []branchChild
	for _, w := range ws {
		var input any
		if json.Unmarshal(w.Input, &input) != nil {
			continue
		}
		if b := branchOf(w, input); b != nil && b.Fork == fork && (token == "" || b.Token == token) {
			if token == "" {
				token = b.Token
			}
			out = append(out, branchChild{w: w, branch: b.Branch})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].branch < out[j].branch })
	return out, token, nil
}

// wonBranch is the branch of the run token of a competing fork whose claim to the win was
// delivered (-1: none).
func (r *run) wonBranch(sc workflow.StepContext, token string) (int, error) {
	sigs, err := sc.Reader().Signals(r.ctx, sc.WorkflowID(), forkWonSignal)
	if err != nil {
		return -1, fmt.Errorf("error reading the fork's winner: %w", err)
	}
	for _, s := range sigs {
		var won forkWon
		if s.IdempotencyKey != nil && *s.IdempotencyKey == forkWonKey(token) && json.Unmarshal(s.Payload, &won) == nil {
			return won.Branch, nil
		}
	}
	return -1, nil
}

// forkOutcome is the output of a fork whose branches all ended: every branch's output in the order
// they are declared, or with compete the winner's; a branch that faulted faults the fork (with
// compete, only when no branch finished).
func (r *run) forkOutcome(sc workflow.StepContext, t *task) (any, *Problem) {
	lost := func(detail string) *Problem {
		return &Problem{Type: errTypeRuntime, Status: 500, Title: "Fork Branches Lost", Detail: detail, Instance: t.path}
	}
	children, token, err := r.branchChildren(sc, sc.WorkflowID(), t.path, "")
	if err != nil {
		return nil, lost(err.Error())
	}
	if len(children) != len(t.body.tasks) {
		return nil, lost(fmt.Sprintf("found %d of the fork's %d branches", len(children), len(t.body.tasks)))
	}
	won := -1
	if t.fork.compete {
		if won, err = r.wonBranch(sc, token); err != nil {
			return nil, lost(err.Error())
		}
	}
	var firstFault *Problem
	outputs := make([]any, len(children))
	var winner, firstDone *branchChild
	for i := range children {
		c := &children[i]
		out, p := branchResult(c.w, t)
		if p != nil {
			if firstFault == nil {
				firstFault = p
			}
			continue
		}
		outputs[i] = out
		var ref struct {
			Branch *branchRef `json:"branch"`
		}
		_ = json.Unmarshal(c.w.Variables, &ref)
		if c.branch == won || (won < 0 && ref.Branch != nil && ref.Branch.Won) {
			winner = c
		}
		if firstDone == nil || finishedBefore(c.w, firstDone.w) {
			firstDone = c
		}
	}
	if !t.fork.compete {
		if firstFault != nil {
			return nil, firstFault
		}
		return outputs, nil
	}
	if winner == nil {
		winner = firstDone
	}
	if winner == nil {
		return nil, firstFault
	}
	return outputs[indexOf(children, winner)], nil
}

func indexOf(cs []branchChild, c *branchChild) int {
	for i := range cs {
		if &cs[i] == c {
			return i
		}
	}
	return -1
}

func finishedBefore(a, b *persistence.Workflow) bool {
	if a.Finished == nil || b.Finished == nil {
		return a.ID < b.ID
	}
	if a.Finished.Equal(*b.Finished) {
		return a.ID < b.ID
	}
	return a.Finished.Before(*b.Finished)
}

// branchResult is a branch child's output, or its fault.
func branchResult(w *persistence.Workflow, fork *task) (any, *Problem) {
	if w.Status != persistence.StatusFinished {
		p := ProblemOf(w)
		if p == nil {
			p = &Problem{Type: errTypeRuntime, Status: 500, Title: "Branch " + string(w.Status), Instance: fork.path}
			if w.LastError != nil {
				p.Detail = *w.LastError
			}
		}
		return nil, p
	}
	var out any
	if raw := workflow.OutputOf(w); len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, &Problem{Type: errTypeRuntime, Status: 500, Title: "Invalid Branch Output", Detail: err.Error(), Instance: fork.path}
		}
	}
	return out, nil
}
