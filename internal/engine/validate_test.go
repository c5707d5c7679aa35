package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// The Go SDK gets the same limits as the API: times in the years 0001 to 9999, no NUL characters,
// bounded keys and texts, 32-bit priorities, storable JSON. Each refusal is INVALID_INPUT naming
// the field and changes nothing, on both backends.
func TestOperationsRefuseWhatCannotBeStored(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		engine := newEngine(t, store)
		tooLate := time.Date(9999, 12, 31, 23, 59, 59, 0, time.FixedZone("", -(23*3600+59*60))) // 10000-01-01 in UTC
		tooEarly := time.Date(0, 12, 31, 23, 0, 0, 0, time.UTC)
		long := strings.Repeat("k", workflow.MaxKeyLength+1)

		for _, c := range []struct {
			p     workflow.StartParams
			field string
		}{
			{workflow.StartParams{StartAt: &tooLate}, "startAt"},
			{workflow.StartParams{StartAt: &tooEarly}, "startAt"},
			{workflow.StartParams{ExternalID: long}, "externalId"},
			{workflow.StartParams{BusinessKey: "a\x00b"}, "businessKey"},
			{workflow.StartParams{LaunchToken: "\xff\xfe"}, "launchToken"},
			{workflow.StartParams{IdempotencyKey: long}, "idempotencyKey"},
			{workflow.StartParams{Priority: 1 << 31}, "priority"},
			{workflow.StartParams{Input: json.RawMessage(`{"k":"a\u0000b"}`)}, "input"},
			{workflow.StartParams{Input: json.RawMessage(`{"k":"\ud800"}`)}, "input"},
			{workflow.StartParams{Variables: json.RawMessage(`{"` + long + `":1}`)}, "variables"},
			{workflow.StartParams{Variables: json.RawMessage(`{"a\u0000":1}`)}, "variables"},
		} {
			c.p.Type = "demo.order"
			_, err := engine.Start(ctx, c.p)
			requireCode(t, err, workflow.CodeInvalidInput, c.field)
		}
		finish := func(workflow.StepContext) (workflow.Next, error) { return workflow.Finish(), nil }
		for _, def := range []workflow.Definition{
			{Type: long, States: []workflow.State{{Name: "s", Kind: workflow.Start, Next: []string{"e"}, Handler: finish}, {Name: "e", Kind: workflow.End}}},
			{Type: "t.nul", States: []workflow.State{{Name: "s\x00", Kind: workflow.Start, Next: []string{"e"}, Handler: finish}, {Name: "e", Kind: workflow.End}}},
			{Type: "t.long", States: []workflow.State{{Name: "s", Kind: workflow.Start, Next: []string{"e"}, Handler: finish}, {Name: "e", Kind: workflow.End}},
				ExecutorGroup: long},
		} {
			_, err := engine.Register(ctx, def)
			require.Equal(t, workflow.CodeInvalidInput, workflow.CodeOf(err), "%v", err)
		}
		_, err := engine.StartMany(ctx, []workflow.StartParams{{Type: "demo.order"}, {Type: "demo.order", StartAt: &tooLate}})
		requireCode(t, err, workflow.CodeInvalidInput, "workflows[1].startAt")
		n, err := store.WorkflowCount(ctx, persistence.WorkflowFilter{})
		require.NoError(t, err)
		require.Zero(t, n)

		res, err := engine.Start(ctx, workflow.StartParams{Type: "demo.approval", StartAt: &workflow.MaxTime,
			Input: json.RawMessage(`{"k":"a\\u0000b","e":"\ud83d\ude00"}`)})
		require.NoError(t, err, "the last instant, and JSON escapes that are not NUL, are stored")
		id := res.Workflow.ID
		w, err := store.WorkflowGet(ctx, id)
		require.NoError(t, err)
		require.True(t, w.NextActivation.Equal(persistence.UTC(workflow.MaxTime)))

		change := workflow.ChangeParams{ID: id}
		_, err = engine.Pause(ctx, workflow.ChangeParams{ID: id, Reason: strings.Repeat("r", workflow.MaxTextLength+1)})
		requireCode(t, err, workflow.CodeInvalidInput, "reason")
		_, err = engine.Cancel(ctx, workflow.ChangeParams{ID: id, IdempotencyKey: "a\x00"})
		requireCode(t, err, workflow.CodeInvalidInput, "idempotencyKey")
		_, err = engine.Update(ctx, workflow.UpdateParams{ChangeParams: change, NextActivation: &tooLate})
		requireCode(t, err, workflow.CodeInvalidInput, "nextActivation")
		text := "a\x00"
		_, err = engine.Update(ctx, workflow.UpdateParams{ChangeParams: change, StateText: &text})
		requireCode(t, err, workflow.CodeInvalidInput, "stateText")
		_, err = engine.Update(ctx, workflow.UpdateParams{ChangeParams: change, Variables: json.RawMessage(`{"k":"\u0000"}`)})
		requireCode(t, err, workflow.CodeInvalidInput, "variables")
		_, err = engine.Retry(ctx, workflow.RetryParams{ChangeParams: change, State: long})
		requireCode(t, err, workflow.CodeInvalidInput, "state")
		_, err = engine.Signal(ctx, workflow.SignalParams{ID: id, Name: long})
		requireCode(t, err, workflow.CodeInvalidInput, "name")
		_, err = engine.Signal(ctx, workflow.SignalParams{ID: id, Name: "approve", Payload: json.RawMessage(`"\u0000"`)})
		requireCode(t, err, workflow.CodeInvalidInput, "payload")
		after, err := store.WorkflowGet(ctx, id)
		require.NoError(t, err)
		require.Equal(t, w.Version, after.Version, "nothing refused changed the workflow")

		_, err = engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "demo.order", Cron: "@daily", StartAt: &tooLate})
		requireCode(t, err, workflow.CodeInvalidInput, "startAt")
		_, err = engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "demo.order", Cron: "@daily", EndAt: &tooEarly})
		requireCode(t, err, workflow.CodeInvalidInput, "endAt")
		_, err = engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "demo.order", Cron: "@daily", Priority: -1 << 40})
		requireCode(t, err, workflow.CodeInvalidInput, "priority")
		// A schedule whose next fire would fall past the last instant has fired for the last time:
		// a fire time in the year 10000 could not be stored.
		lastHours := time.Date(9999, 12, 31, 22, 30, 0, 0, time.UTC)
		sc, err := engine.CreateSchedule(ctx, workflow.ScheduleParams{Type: "demo.order", Cron: "0 * * * *", StartAt: &lastHours})
		require.NoError(t, err)
		require.Equal(t, time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC), *sc.NextFire)
		fired, err := engine.FireSchedules(ctx, *sc.NextFire)
		require.NoError(t, err)
		require.Equal(t, 1, fired)
		sc, err = store.ScheduleGet(ctx, sc.ID)
		require.NoError(t, err)
		require.Nil(t, sc.NextFire)
		_, err = engine.BackfillSchedule(ctx, sc.ID, tooEarly, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
		requireCode(t, err, workflow.CodeInvalidInput, "from")
	})
}

func TestCheckJSON(t *testing.T) {
	t.Parallel()
	for raw, ok := range map[string]bool{
		`{}`: true, `{"k":"a\\u0000b"}`: true, `{"k":"\\\\u0000"}`: true, `"\ud83d\ude00"`: true, `"\u00e9"`: true, `"\\"`: true,
		`{"k":"\u0000"}`: false, `{"\u0000":1}`: false, `["x","\u0000"]`: false, `"\ud83d"`: false, `"\ude00"`: false,
		`"\ud83d\u0041"`: false, `"\ud83dx"`: false, `"\ud83d\n"`: false, "\"a\x00\"": false,
	} {
		err := workflow.CheckJSON("f", []byte(raw))
		if ok {
			require.NoError(t, err, raw)
		} else {
			require.Error(t, err, raw)
			require.Equal(t, workflow.CodeInvalidInput, workflow.CodeOf(err))
		}
	}
}
