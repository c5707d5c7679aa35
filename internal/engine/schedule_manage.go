package engine

import (
	"context"
	"errors"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// UpdateSchedule changes the fields of a schedule that p gives, checks them as CreateSchedule
// does, and computes its next fire again (from now; none while paused). The audit entry commits
// with the change.
func (e *Engine) UpdateSchedule(ctx context.Context, p workflow.UpdateScheduleParams) (*persistence.Schedule, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return e.changeSchedule(ctx, p.ID, p.Actor, "updateSchedule", func(sc *persistence.Schedule) error {
		setIf(&sc.Cron, p.Cron)
		setIf(&sc.Timezone, p.Timezone)
		setIf(&sc.OverlapPolicy, p.OverlapPolicy)
		setIf(&sc.Priority, p.Priority)
		if p.StartAt != nil {
			sc.StartAt = p.StartAt
		}
		if p.EndAt != nil {
			sc.EndAt = p.EndAt
		}
		input := []byte(sc.Input)
		if p.Input != nil {
			input = p.Input
		}
		return e.prepareSchedule(sc, input)
	})
}

// DeleteSchedule deletes a schedule; the workflows it started stay. The audit entry commits with
// the deletion.
func (e *Engine) DeleteSchedule(ctx context.Context, id int64, actor string) error {
	_, err := e.changeSchedule(ctx, id, actor, "deleteSchedule", nil)
	return err
}

// changeSchedule locks a schedule, applies change to it and saves it (change nil: deletes it),
// and writes the audit entry of action, all in one transaction.
func (e *Engine) changeSchedule(ctx context.Context, id int64, actor, action string, change func(*persistence.Schedule) error) (*persistence.Schedule, error) {
	var sc *persistence.Schedule
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		var err error
		sc, err = tx.ScheduleGet(ctx, id)
		if errors.Is(err, persistence.ErrNotFound) {
			return notFound("id", "no schedule %v", scheduleRef(id))
		} else if err != nil {
			return err
		}
		if change == nil {
			err = tx.ScheduleDelete(ctx, id)
		} else if err = change(sc); err == nil {
			err = nameConflict(tx.ScheduleSave(ctx, sc), sc.Name)
		}
		if err != nil {
			return err
		}
		return audit(ctx, tx, actor, action, subjectOf("Schedule", id), "", scheduleDetails(sc))
	})
	if err != nil {
		return nil, err
	}
	return sc, nil
}

// nameConflict turns a unique violation of a schedule's name into a CONFLICT on the field name.
func nameConflict(err error, name *string) error {
	if errors.Is(err, persistence.ErrConflict) && name != nil {
		return conflictOn("name", "a schedule named %q exists", *name)
	}
	return err
}

// scheduleDetails is what the audit log records of a schedule.
func scheduleDetails(sc *persistence.Schedule) map[string]any {
	d := map[string]any{"type": sc.DefinitionType, "cron": sc.Cron, "timezone": sc.Timezone, "paused": sc.Paused}
	if sc.Name != nil {
		d["name"] = *sc.Name
	}
	return d
}

// setIf sets *dst to *v when v is given.
func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// Schedule returns one schedule (persistence.ErrNotFound when there is none).
func (e *Engine) Schedule(ctx context.Context, id int64) (*persistence.Schedule, error) {
	return e.store.ScheduleGet(ctx, id)
}

// ScheduleByName returns the schedule of a name (persistence.ErrNotFound when there is none).
func (e *Engine) ScheduleByName(ctx context.Context, name string) (*persistence.Schedule, error) {
	return e.store.ScheduleGetByName(ctx, name)
}
