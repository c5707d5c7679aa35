// The schedules of deployed documents: a document that asks to be started on a cron expression or
// an interval keeps a schedule of its type, and one that asks to be started by events is started
// by PublishEvent.

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// CheckCron reports whether a cron expression (or `@every <duration>`) could be a schedule's, as
// CreateSchedule checks it (UTC): an *Error INVALID_INPUT on field "cron" when not.
func CheckCron(spec string) error {
	_, err := parseCron(spec, time.UTC, persistence.Now())
	return err
}

// syncDocumentSchedule keeps the schedule of a deployed type (named as the type) in step with the
// newest version's document, in the transaction that stores the version: created with the
// document's cron expression (overlapping runs allowed, since the DSL starts a run at every fire
// whether the last one ended or not), its expression replaced by a later version's (paused or not,
// as an operator left it), deleted when a later version has none. A schedule of that name that
// starts another type is not the document's: deploying over it is a CONFLICT.
func (e *Engine) syncDocumentSchedule(ctx context.Context, tx *persistence.Store, typ, cron, actor string) error {
	sc, err := tx.ScheduleGetByName(ctx, typ)
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		sc = nil
	case err != nil:
		return err
	case sc.DefinitionType != typ:
		return conflictOn("schedule", "a schedule named %q starts workflows of type %q", typ, sc.DefinitionType)
	}
	switch {
	case sc == nil && cron == "":
		return nil
	case sc == nil:
		name := typ
		sc = &persistence.Schedule{Name: &name, DefinitionType: typ, Cron: cron, OverlapPolicy: workflow.OverlapAllow}
		if err := e.prepareSchedule(sc, []byte("{}")); err != nil {
			return err
		}
		if err := tx.ScheduleInsert(ctx, sc); err != nil {
			return nameConflict(err, sc.Name)
		}
		return audit(ctx, tx, actor, "createSchedule", subjectOf("Schedule", sc.ID), "deployed document", scheduleDetails(sc))
	case cron == "":
		if err := tx.ScheduleDelete(ctx, sc.ID); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "deleteSchedule", subjectOf("Schedule", sc.ID), "deployed document", scheduleDetails(sc))
	case sc.Cron == cron:
		return nil
	default:
		sc.Cron = cron
		if err := e.prepareSchedule(sc, sc.Input); err != nil {
			return err
		}
		if err := tx.ScheduleSave(ctx, sc); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "updateSchedule", subjectOf("Schedule", sc.ID), "deployed document", scheduleDetails(sc))
	}
}

// startOnEvent starts a workflow of each deployed type (its newest version) that an event starts
// (workflow.Definition.StartOn and StartEvent), once per event (source and id) and type.
func (e *Engine) startOnEvent(ctx context.Context, typ, key string, event json.RawMessage) ([]*persistence.Workflow, error) {
	if e.compiler() == nil {
		return nil, nil
	}
	rows, err := e.store.DefinitionList(ctx, persistence.DefinitionListParams{})
	if err != nil {
		return nil, err
	}
	var out []*persistence.Workflow
	for _, row := range rows {
		if sourceOf(row.Spec) == "" || !startsOn(row.Spec, typ) {
			continue
		}
		def, err := e.specOfRow(row)
		if err != nil {
			e.log.Warn("a deployed definition could not be read to match an event", "type", row.Type, "error", err)
			continue
		}
		if def.StartEvent == nil {
			continue
		}
		input, err := def.StartEvent(ctx, event)
		if err != nil {
			e.log.Warn("an event could not be matched to start a workflow", "type", row.Type, "error", err)
			continue
		}
		if input == nil {
			continue
		}
		k := fmt.Sprintf("start:%s:%s", row.Type, key)
		if len(k) > workflow.MaxKeyLength {
			k = k[:workflow.MaxKeyLength]
		}
		res, err := e.Start(ctx, workflow.StartParams{Type: row.Type, Input: input, IdempotencyKey: k})
		if err != nil {
			return out, err
		}
		if res.Created {
			out = append(out, res.Workflow)
		}
	}
	return out, nil
}

// startsOn reads whether a stored spec lists an event type among those that start it.
func startsOn(spec json.RawMessage, typ string) bool {
	var probe struct {
		StartOn []string `json:"startOn"`
	}
	_ = json.Unmarshal(spec, &probe)
	return slices.Contains(probe.StartOn, typ)
}
