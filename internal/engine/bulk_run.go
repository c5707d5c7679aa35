package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// BulkRunOptions configures RunBulk.
type BulkRunOptions struct {
	// Owner names the runner (unique per node): the lease it takes on an operation is in its name.
	Owner string
	// Lease is how long an operation stays this runner's after each batch: when the node dies,
	// another runner takes the operation over once it has run out.
	Lease time.Duration
	// Batch is how many targets one transaction changes.
	Batch int
	// MaxBatches stops the run after so many batches (0: no limit); tests use it to stop a runner
	// mid-operation as a killed node would.
	MaxBatches int
}

// Defaults of BulkRunOptions.
const (
	DefaultBulkLease = 30 * time.Second
	DefaultBulkBatch = 200
)

// bulkBatchResult is what one committed batch leaves to do after its commit.
type bulkBatchResult struct {
	done      bool
	processed int
	// last is the highest target marked: every target below it is marked too.
	last      int64
	wake      map[string]bool
	interrupt []*persistence.Workflow
}

// RunBulk takes over the bulk operations that wait for a runner (never leased, or whose lease ran
// out) and works through each of them, batch by batch, until it ends, another runner has it, or
// ctx ends. It returns how many targets it processed.
func (e *Engine) RunBulk(ctx context.Context, o BulkRunOptions) (int, error) {
	if o.Lease <= 0 {
		o.Lease = DefaultBulkLease
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBulkBatch
	}
	ids, err := e.store.BulkOperationLeasable(ctx, persistence.Now(), 10)
	if err != nil {
		return 0, err
	}
	total, batches := 0, 0
	for _, id := range ids {
		now := persistence.Now()
		ok, err := e.store.BulkOperationLease(ctx, id, o.Owner, now, now.Add(o.Lease))
		if err != nil {
			return total, err
		}
		var after int64 // the targets up to here are done with
		for ok {
			if o.MaxBatches > 0 && batches >= o.MaxBatches {
				return total, nil
			}
			batches++
			res, err := e.bulkBatch(ctx, id, o, after, o.Batch)
			if err != nil && ctx.Err() == nil {
				// Something the database refused in a batch: go one target at a time, and put aside
				// the target that cannot be changed.
				e.log.Warn("a bulk operation's batch failed; going on one workflow at a time", "operation", id, "error", err)
				if res, err = e.bulkBatch(ctx, id, o, after, 1); err != nil && ctx.Err() == nil {
					res, err = e.bulkPutAside(ctx, id, o, err)
				}
			}
			if err != nil {
				return total, err
			}
			total += res.processed
			after = max(after, res.last)
			ok = !res.done
		}
	}
	return total, nil
}

// bulkBatch changes up to size pending targets of an operation this runner leases, in one
// transaction that also marks them and renews the lease; an operation done with is finished.
func (e *Engine) bulkBatch(ctx context.Context, id int64, o BulkRunOptions, after int64, size int) (bulkBatchResult, error) {
	var res bulkBatchResult
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		res = bulkBatchResult{wake: map[string]bool{}}
		op, err := tx.BulkOperationGet(ctx, id)
		if err != nil {
			return err
		}
		if op.Status.Ended() || op.LeaseOwner == nil || *op.LeaseOwner != o.Owner {
			res.done = true // cancelled, or another runner's now
			return nil
		}
		ids, err := tx.BulkTargetsPending(ctx, id, after, size)
		if err != nil {
			return err
		}
		now := persistence.Now()
		if len(ids) == 0 {
			res.done = true
			op.Status = persistence.BulkSucceeded
			if op.Failed > 0 && op.Succeeded == 0 {
				op.Status = persistence.BulkFailed
			}
			op.Finished, op.LeaseOwner, op.LeaseUntil = &now, nil, nil
			return tx.BulkOperationSave(ctx, op)
		}
		ok, failed, err := e.bulkApply(ctx, tx, op, ids, &res)
		if err != nil {
			return err
		}
		if err := tx.BulkTargetsMark(ctx, id, ok, failed); err != nil {
			return err
		}
		res.processed, res.last = len(ids), ids[len(ids)-1]
		op.Processed += int64(len(ids))
		op.Succeeded += int64(len(ok))
		op.Failed += int64(len(failed))
		until := now.Add(o.Lease)
		op.Status, op.LeaseUntil = persistence.BulkRunning, &until
		return tx.BulkOperationSave(ctx, op)
	})
	if err != nil {
		return bulkBatchResult{}, err
	}
	for _, w := range res.interrupt {
		e.interrupt(w.ID, w.Version)
	}
	e.afterCommit(res.wake, res.processed > 0)
	return res, nil
}

// bulkPutAside marks the next pending target of an operation failed with cause, in a transaction
// of its own: one the database refuses to change does not hold up the rest.
func (e *Engine) bulkPutAside(ctx context.Context, id int64, o BulkRunOptions, cause error) (bulkBatchResult, error) {
	e.log.Error("a bulk operation could not change a workflow", "operation", id, "error", cause)
	res := bulkBatchResult{}
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		res = bulkBatchResult{}
		op, err := tx.BulkOperationGet(ctx, id)
		if err != nil {
			return err
		}
		if op.Status.Ended() || op.LeaseOwner == nil || *op.LeaseOwner != o.Owner {
			res.done = true
			return nil
		}
		ids, err := tx.BulkTargetsPending(ctx, id, 0, 1)
		if err != nil || len(ids) == 0 {
			return err
		}
		if err := tx.BulkTargetsMark(ctx, id, nil, map[int64]string{ids[0]: string(workflow.CodeInternal) + ": the database refused the change"}); err != nil {
			return err
		}
		res.processed = 1
		op.Processed++
		op.Failed++
		return tx.BulkOperationSave(ctx, op)
	})
	return res, err
}

// bulkApply runs an operation's action on targets inside transaction tx, with the operation's
// actor and reason: through the change of workflows the single operations run (a batch at a time)
// for RETRY, CANCEL, PAUSE and RESUME, one workflow at a time for SIGNAL and DELETE. It returns the
// targets changed and, by target, why one was left as it was (its *workflow.Error).
func (e *Engine) bulkApply(ctx context.Context, tx *persistence.Store, op *persistence.BulkOperation, ids []int64, res *bulkBatchResult) (ok []int64, failed map[int64]string, _ error) {
	reason := fmt.Sprintf("bulk operation %d", op.ID)
	if op.Reason != nil {
		reason += ": " + *op.Reason
	}
	failed = map[int64]string{}
	why := func(err error) string {
		var we *workflow.Error
		errors.As(err, &we)
		return string(we.Code) + ": " + we.Message
	}
	var change changeOp
	switch op.Action {
	case workflow.BulkRetry:
		p := workflow.RetryParams{State: deref(op.State)}
		change = changeOp{name: "retry", request: p.State, fn: retrying(p)}
	case workflow.BulkCancel:
		change = e.cancelOp()
	case workflow.BulkPause:
		change = changeOp{name: "pause", fn: pausing}
	case workflow.BulkResume:
		change = changeOp{name: "resume", fn: resuming}
	case workflow.BulkSignal, workflow.BulkDelete:
		for _, wid := range ids {
			err := e.bulkApplyOne(ctx, tx, op, wid, reason, res)
			var we *workflow.Error
			switch {
			case err == nil:
				ok = append(ok, wid)
			case errors.As(err, &we) && we.Code != workflow.CodeInternal:
				failed[wid] = why(err)
			default:
				return nil, nil, err
			}
		}
		return ok, failed, nil
	default:
		return nil, nil, fmt.Errorf("unknown bulk action %q", op.Action)
	}
	// No idempotency key: the target's row, marked in this transaction, is what keeps the change to
	// one (a key would cost two more statements per workflow).
	ps := make([]workflow.ChangeParams, len(ids))
	for i, wid := range ids {
		ps[i] = workflow.ChangeParams{ID: wid, Reason: reason, Actor: op.Actor}
	}
	changed, err := e.changeManyIn(ctx, tx, change, ps, res.wake)
	if err != nil {
		return nil, nil, err
	}
	for _, wid := range ids {
		if err := changed.refused[wid]; err != nil {
			failed[wid] = why(err)
		} else {
			ok = append(ok, wid)
		}
	}
	res.interrupt = append(res.interrupt, changed.interrupt...)
	return ok, failed, nil
}

// bulkApplyOne runs a SIGNAL or DELETE operation's action on one of its targets inside
// transaction tx, through the code of the single operation of the same name.
func (e *Engine) bulkApplyOne(ctx context.Context, tx *persistence.Store, op *persistence.BulkOperation, wid int64, reason string, res *bulkBatchResult) error {
	if op.Action == workflow.BulkDelete {
		return e.deleteIn(ctx, tx, workflow.DeleteParams{ID: wid, Reason: reason, Actor: op.Actor})
	}
	w, woke, err := e.signalIn(ctx, tx, workflow.SignalParams{ID: wid, Name: deref(op.SignalName), Payload: op.SignalPayload,
		Actor: op.Actor})
	if err == nil && woke {
		res.wake[w.ExecutorGroup] = true
	}
	return err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
