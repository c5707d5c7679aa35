package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// maxPreload bounds --preload: enough for a database with months of traffic.
const maxPreload = 10_000_000

// preloadBatch is how many ended workflows one transaction of the preload writes.
const preloadBatch = 2000

// preload fills the database with n ended workflows of the bench's definition, each with the
// history a real run leaves (a task instance, an action and change events per step, a variable),
// then refreshes the planner's statistics: the run is then measured on a database like a user's
// after weeks of traffic. The preloaded workflows stay in the database.
func (b *bench) preload(ctx context.Context, engine *engine.Engine, n int) error {
	row, err := b.store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: b.cfg.definition})
	if err != nil {
		return fmt.Errorf("error reading definition %s: %w", b.cfg.definition, err)
	}
	steps, end := []string{"preloaded"}, "preloaded"
	if def, ok := engine.Definition(b.cfg.definition); ok {
		steps, end = pathOf(def)
	}
	// Ended a day ago and earlier, one millisecond apart, as if the traffic came before the run.
	base := persistence.Now().Add(-24*time.Hour - time.Duration(n)*time.Millisecond)
	for done := 0; done < n; done += preloadBatch {
		m := min(preloadBatch, n-done)
		err := b.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
			wfs := make([]*persistence.Workflow, m)
			for i := range wfs {
				at := base.Add(time.Duration(done+i) * time.Millisecond)
				wfs[i] = &persistence.Workflow{Type: row.Type, DefinitionVersion: row.Version, Status: persistence.StatusFinished,
					State: end, ExecutorGroup: row.ExecutorGroup, Input: json.RawMessage(b.cfg.input),
					Variables: json.RawMessage(`{"preloaded": true}`), Created: at, Modified: at, Started: &at, Finished: &at, Version: len(steps) + 1}
			}
			if err := tx.WorkflowInsertMany(ctx, wfs); err != nil {
				return err
			}
			var tasks []*persistence.TaskInstance
			for _, w := range wfs {
				for i, s := range steps {
					tasks = append(tasks, &persistence.TaskInstance{WorkflowID: w.ID, State: s, TaskType: "handler", Attempt: 1,
						Status: persistence.TaskSucceeded, Host: "preload", Started: w.Created.Add(time.Duration(i) * time.Microsecond), Finished: w.Finished})
				}
			}
			if err := tx.TaskInstanceInsertMany(ctx, tasks); err != nil {
				return err
			}
			actions := make([]*persistence.Action, len(tasks))
			for i, t := range tasks {
				next := end
				if j := i % len(steps); j+1 < len(steps) {
					next = steps[j+1]
				}
				from := t.State
				actions[i] = &persistence.Action{WorkflowID: t.WorkflowID, Type: persistence.ActionStateExecution, FromState: &from,
					State: next, TaskInstanceID: &t.ID, At: t.Started}
			}
			if err := tx.ActionInsertMany(ctx, actions); err != nil {
				return err
			}
			var vars []*persistence.ActionVariable
			var events []*persistence.ChangeEvent
			for i, a := range actions {
				if i%len(steps) == 0 {
					vars = append(vars, &persistence.ActionVariable{WorkflowID: a.WorkflowID, ActionID: a.ID, Key: "preloaded", Value: json.RawMessage(`true`)})
					events = append(events, &persistence.ChangeEvent{WorkflowID: a.WorkflowID, Type: workflow.EventCreated,
						Status: persistence.StatusCreated, State: steps[0], At: a.At})
				}
				status := persistence.StatusInProgress
				if a.State == end {
					status = persistence.StatusFinished
				}
				events = append(events, &persistence.ChangeEvent{WorkflowID: a.WorkflowID, Type: string(a.Type), ActionID: &a.ID,
					Status: status, State: a.State, At: a.At})
			}
			if err := tx.ActionVariableInsertMany(ctx, vars); err != nil {
				return err
			}
			return tx.ChangeEventInsertMany(ctx, events)
		})
		if err != nil {
			return fmt.Errorf("error preloading ended workflows: %w", err)
		}
	}
	return b.store.Analyze(ctx)
}

// pathOf returns the states a workflow of a definition runs through when every step takes its
// first next state, and the END state it reaches.
func pathOf(def *workflow.Definition) (steps []string, end string) {
	byName := map[string]*workflow.State{}
	var cur *workflow.State
	for i := range def.States {
		s := &def.States[i]
		byName[s.Name] = s
		if s.Kind == workflow.Start && cur == nil {
			cur = s
		}
	}
	for cur != nil && len(steps) < 16 {
		if cur.Kind == workflow.End || cur.Kind == workflow.ErrorKind || len(cur.Next) == 0 {
			return steps, cur.Name
		}
		steps = append(steps, cur.Name)
		cur = byName[cur.Next[0]]
	}
	if len(steps) == 0 {
		steps = []string{"preloaded"}
	}
	return steps, "preloaded"
}
