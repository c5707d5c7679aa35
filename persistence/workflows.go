package persistence

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// WorkflowInsertMany inserts workflows in one statement and sets their IDs. Created and Modified
// default to now. A duplicate (type, externalId) fails the whole insert with ErrConflict.
func (s *Store) WorkflowInsertMany(ctx context.Context, wfs []*Workflow) error {
	if len(wfs) == 0 {
		return nil
	}
	now := Now()
	for _, w := range wfs {
		if w.Created.IsZero() {
			w.Created = now
		}
		if w.Modified.IsZero() {
			w.Modified = w.Created
		}
		if len(w.Input) == 0 {
			w.Input = emptyObject
		}
		if len(w.Variables) == 0 {
			w.Variables = emptyObject
		}
		w.NextActivation = UTCPtr(w.NextActivation)
	}
	return insertMany(ctx, s, wfs, "workflows", s.dialect.insertWorkflows)
}

var emptyObject = []byte("{}")

// WorkflowGet returns one workflow.
func (s *Store) WorkflowGet(ctx context.Context, id int64) (*Workflow, error) {
	w := new(Workflow)
	if err := s.idb.NewSelect().Model(w).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, noRows(err, "workflow", id)
	}
	return w, nil
}

// WorkflowGetForUpdate returns one workflow and locks its row until the transaction ends (SQLite's
// transactions already hold the only write lock).
func (s *Store) WorkflowGetForUpdate(ctx context.Context, id int64) (*Workflow, error) {
	w := new(Workflow)
	q := s.forUpdate(s.idb.NewSelect().Model(w).Where("id = ?", id), false)
	if err := q.Scan(ctx); err != nil {
		return nil, noRows(err, "workflow", id)
	}
	return w, nil
}

// WorkflowGetMany returns the workflows with the given IDs, in ID order.
func (s *Store) WorkflowGetMany(ctx context.Context, ids []int64) ([]*Workflow, error) {
	return getByIDs[Workflow](ctx, s, ids, "workflows")
}

// WorkflowGetManyWithoutData returns workflows by ID, like WorkflowGetMany, without their input and
// variables (Workflow.DataOmitted is set): for readers that hand them on to many, such as the live
// event stream, which must not hold megabytes per workflow for subscribers that never read them.
func (s *Store) WorkflowGetManyWithoutData(ctx context.Context, ids []int64) ([]*Workflow, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var out []*Workflow
	if err := s.idb.NewSelect().Model(&out).ExcludeColumn("input", "variables").
		Where("w.id IN (?)", bunIn(ids)).OrderExpr("w.id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error loading %d workflows: %w", len(ids), err)
	}
	for _, w := range out {
		w.DataOmitted = true
	}
	return out, nil
}

// WorkflowGetByExternalID returns the workflow of a type with an external ID.
func (s *Store) WorkflowGetByExternalID(ctx context.Context, typ, externalID string) (*Workflow, error) {
	w := new(Workflow)
	if err := s.idb.NewSelect().Model(w).Where("type = ? AND external_id = ?", typ, externalID).Scan(ctx); err != nil {
		return nil, noRows(err, "workflow", typ+"/"+externalID)
	}
	return w, nil
}

// WorkflowSave writes every column of w, fenced by the version it was read at: it fails with
// ErrConflict when another writer changed the row since, and otherwise bumps w.Version.
func (s *Store) WorkflowSave(ctx context.Context, w *Workflow) error {
	if w.DataOmitted {
		// Saving it would blank the input and variables it was read without.
		return fmt.Errorf("error saving workflow %d: it was read without its input and variables", w.ID)
	}
	w.Modified = Now()
	w.NextActivation = UTCPtr(w.NextActivation)
	readVersion := w.Version
	w.Version++
	res, err := s.idb.NewUpdate().Model(w).ExcludeColumn("id", "created").
		Where("id = ? AND version = ?", w.ID, readVersion).Exec(ctx)
	if err != nil {
		w.Version = readVersion
		return fmt.Errorf("error saving workflow %d: %w", w.ID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		w.Version = readVersion
		return fmt.Errorf("workflow %d changed while it was being updated: %w", w.ID, ErrConflict)
	}
	return nil
}

// WorkflowClaimParams is the input of WorkflowClaim.
type WorkflowClaimParams struct {
	ExecutorID int64
	Group      string
	Limit      int
	Now        time.Time
	// StepDeadline is when a claimed step counts as timed out if its executor never completes it.
	StepDeadline time.Time
	// StepTimeouts are the states whose steps have a timeout of their own: a workflow claimed in
	// one of them gets Now plus that timeout as its step deadline instead of StepDeadline.
	StepTimeouts []StepTimeout
	// Types limits the claim to the workflow types this node can run (none: claim nothing).
	Types []string
}

// StepTimeout is how long a step of one state of one definition version may run.
type StepTimeout struct {
	Type    string
	Version int
	State   string
	Timeout time.Duration
}

// WorkflowClaim marks up to Limit due workflows of a group as EXECUTING by an executor and returns
// them with their new versions and step deadlines. Order: priority (highest first), next
// activation, id. Concurrent claimers never get the same workflow (SKIP LOCKED on PostgreSQL and
// MySQL, one writer on SQLite). A workflow still held by an attempt (executor_id set) is not due, and an
// executor that is stopped or was declared dead claims nothing.
func (s *Store) WorkflowClaim(ctx context.Context, p WorkflowClaimParams) ([]*Workflow, error) {
	if p.Limit <= 0 || len(p.Types) == 0 {
		return nil, nil
	}
	c := s.newClaimStatement(p)
	var wfs []*Workflow
	err := s.Tx(ctx, func(ctx context.Context, tx *Store) error {
		// A claim lost in a database crash only makes the workflow due again.
		if err := tx.AsyncCommit(ctx); err != nil {
			return err
		}
		var err error
		wfs, err = tx.dialect.claim(ctx, tx, c)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("error claiming workflows: %w", err)
	}
	return wfs, nil
}

// WorkflowCompletion is the new row of one workflow after a step, written only if the workflow is
// still held by the executor at the version it was claimed at.
type WorkflowCompletion struct {
	ID             int64
	ExecutorID     int64
	ClaimedVersion int
	Status         Status
	State          string
	StateText      *string
	NextActivation *time.Time
	Retries        int
	Variables      []byte
	WaitSignal     *string
	LastError      *string
	Finished       *time.Time
	// KeepClaim leaves the workflow EXECUTING under the same executor (status must be EXECUTING):
	// its next step runs at once on the same node, without a release and a new claim.
	KeepClaim    bool
	StepDeadline *time.Time
	// Steps is the workflow's count of attempts run, this one included.
	Steps int
}

// WorkflowCompleteMany writes completions in one statement, fenced by executor and version, and
// returns the IDs that were written: a workflow missing from the result was taken from the executor
// (it was presumed dead, cancelled or changed by an operator) and nothing must be recorded for it.
func (s *Store) WorkflowCompleteMany(ctx context.Context, cs []WorkflowCompletion) ([]int64, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	// In the order of their IDs: the update locks the rows in the order it meets them, and given
	// another order it deadlocked with transactions that lock workflows in this one (a completion
	// that ends children locks their parents so, before its own rows).
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(a, b WorkflowCompletion) int { return cmp.Compare(a.ID, b.ID) })
	ids, err := s.dialect.complete(ctx, s, cs, Now())
	if err != nil {
		return nil, fmt.Errorf("error completing %d workflows: %w", len(cs), err)
	}
	return ids, nil
}

// WorkflowWakeParams is the input of WorkflowWake.
type WorkflowWakeParams struct {
	IDs []int64
	// Signal, when set, wakes only workflows waiting for this signal (or for any, or for several
	// names: those check the names when they run).
	Signal string
	Now    time.Time
}

// WorkflowWake makes WAITING workflows due now (a signal arrived, a child ended) and returns the IDs
// it woke. It first locks every row it names (where there are row locks), so that it waits for, and then sees, a
// transaction that is just putting one of them to WAITING: no wake-up is lost between the two.
func (s *Store) WorkflowWake(ctx context.Context, p WorkflowWakeParams) ([]int64, error) {
	woken, _, err := s.WorkflowWakeAndClaim(ctx, p, nil)
	return woken, err
}

// WorkflowActiveChildren counts, per parent, the children that have not ended (every parent asked
// for is in the map, with 0 when all its children ended or it has none).
func (s *Store) WorkflowActiveChildren(ctx context.Context, parentIDs []int64) (map[int64]int, error) {
	out := make(map[int64]int, len(parentIDs))
	if len(parentIDs) == 0 {
		return out, nil
	}
	for _, id := range parentIDs {
		out[id] = 0
	}
	var rows []struct {
		ParentID int64 `bun:"parent_id"`
		N        int   `bun:"n"`
	}
	if err := s.idb.NewSelect().Model((*Workflow)(nil)).ColumnExpr("parent_id, COUNT(*) AS n").
		Where("parent_id IN (?) AND status NOT IN (?)", bunIn(parentIDs), bunIn(terminalStatuses)).
		Group("parent_id").Scan(ctx, &rows); err != nil {
		return nil, fmt.Errorf("error counting active children: %w", err)
	}
	for _, r := range rows {
		out[r.ParentID] = r.N
	}
	return out, nil
}

// WorkflowActiveChildIDs returns the IDs of the children of the given workflows that have not ended.
func (s *Store) WorkflowActiveChildIDs(ctx context.Context, parentIDs []int64) ([]int64, error) {
	if len(parentIDs) == 0 {
		return nil, nil
	}
	var ids []int64
	if err := s.idb.NewSelect().Model((*Workflow)(nil)).Column("id").
		Where("parent_id IN (?) AND status NOT IN (?)", bunIn(parentIDs), bunIn(terminalStatuses)).
		OrderExpr("id").Scan(ctx, &ids); err != nil {
		return nil, fmt.Errorf("error listing active children: %w", err)
	}
	return ids, nil
}

// WorkflowLock locks workflow rows until the transaction ends, in ID order (SQLite's transactions
// already hold the only write lock). A parent's ID is below its children's, so
// taking parents first keeps the one lock order of operations on a family: ancestors first.
func (s *Store) WorkflowLock(ctx context.Context, ids []int64) error {
	lock := s.rowLock(false)
	if len(ids) == 0 || lock == "" {
		return nil
	}
	var locked []int64
	if err := s.idb.NewRaw("SELECT id FROM workflows WHERE id IN (?) ORDER BY id FOR "+lock, bunIn(ids)).Scan(ctx, &locked); err != nil {
		return fmt.Errorf("error locking %d workflows: %w", len(ids), err)
	}
	return nil
}

// WorkflowReleaseParams is the input of WorkflowRelease.
type WorkflowReleaseParams struct {
	ExecutorID int64
	IDs        []int64
}

// WorkflowRelease lets go of workflows an executor still holds although its attempt's completion
// was fenced off: an operator paused, cancelled or changed them while the step ran. Their status
// and schedule stay as the operator left them; only the claim ends, so that they can be claimed
// again. It returns the IDs it released (none for workflows taken over by a recovery meanwhile).
// A workflow still EXECUTING is not released: no operator changed it, so the attempt was fenced
// for another reason (its claim's commit was lost in a database crash, or a newer attempt of the
// same executor runs it); released, it would sit EXECUTING with no executor, which nothing claims
// or recovers. The executor's reconciliation recovers it instead, with a RECOVERY action.
func (s *Store) WorkflowRelease(ctx context.Context, p WorkflowReleaseParams) ([]int64, error) {
	if len(p.IDs) == 0 {
		return nil, nil
	}
	ids, err := s.updateReturningIDs(ctx, updateStatement{Table: "workflows",
		Set: "executor_id = NULL, step_deadline = NULL, version = version + 1, modified = ?", SetArgs: []any{Now()},
		Where: "id IN (?) AND executor_id = ? AND status <> ?", WhereArgs: []any{bunIn(p.IDs), p.ExecutorID, StatusExecuting}})
	if err != nil {
		return nil, fmt.Errorf("error releasing %d workflows of executor %d: %w", len(p.IDs), p.ExecutorID, err)
	}
	return ids, nil
}

// newClaimStatement is the claim of WorkflowClaim: the columns a claim sets, and the due workflows
// of the group and types, in claim order.
func (s *Store) newClaimStatement(p WorkflowClaimParams) claimStatement {
	now := UTC(p.Now)
	args := []any{p.ExecutorID, now, now}
	deadline := "?"
	if len(p.StepTimeouts) > 0 {
		var b strings.Builder
		b.WriteString("CASE")
		for _, st := range p.StepTimeouts {
			b.WriteString(" WHEN type = ? AND definition_version = ? AND state = ? THEN " + s.dialect.castTime("?"))
			args = append(args, st.Type, st.Version, st.State, now.Add(st.Timeout))
		}
		b.WriteString(" ELSE ? END")
		deadline = b.String()
	}
	args = append(args, UTC(p.StepDeadline))
	set := `status = 'EXECUTING', executor_id = ?, version = version + 1, modified = ?,
		started = COALESCE(started, ?), step_deadline = ` + deadline
	// executor_id IS NULL: a workflow whose last attempt still runs somewhere (it was paused or
	// changed meanwhile) is held by that attempt until it ends, so it never runs twice at once. A
	// stopped executor claims nothing: after it was declared dead, an attempt of its is always a
	// late one, whose workflow another node may hold.
	return claimStatement{
		Set:     set,
		SetArgs: args,
		// Claimed is what Set does to a row, for dialects that read the rows before updating them.
		Claimed: func(w *Workflow) {
			w.Status, w.ExecutorID, w.Version, w.Modified = StatusExecuting, &p.ExecutorID, w.Version+1, now
			if w.Started == nil {
				w.Started = &now
			}
			deadline := UTC(p.StepDeadline)
			for _, st := range p.StepTimeouts {
				if w.Type == st.Type && w.DefinitionVersion == st.Version && w.State == st.State {
					deadline = now.Add(st.Timeout)
					break
				}
			}
			w.StepDeadline = &deadline
		},
		Due: `executor_group = ? AND status IN (?) AND next_activation IS NOT NULL AND next_activation <= ?
			AND executor_id IS NULL AND EXISTS (SELECT 1 FROM executors AS e WHERE e.id = ? AND e.stopped IS NULL)`,
		DueArgs: []any{p.Group, bunIn(claimableStatuses), now, p.ExecutorID},
		Types:   p.Types,
		Group:   p.Group,
		Order:   "priority DESC, next_activation, id",
		Limit:   p.Limit,
	}
}
