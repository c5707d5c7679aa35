package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/cairnflow/cairn/internal/engineapi"
	"github.com/cairnflow/cairn/persistence"
)

// The worker pool reaches the engine's machinery (execute, complete, recovery, schedules) through
// engineapi.Of, not through Engine's exported methods, which are the SDK.
func init() {
	engineapi.Register(func(engine any) engineapi.Engine {
		e, ok := engine.(*Engine)
		if !ok {
			panic(fmt.Sprintf("engineapi.Of: %T is not a *engine.Engine", engine))
		}
		return machinery{e}
	})
}

// machinery is an Engine seen as an engineapi.Engine.
type machinery struct{ e *Engine }

var _ engineapi.Outcome = (*outcome)(nil)

func (m machinery) Execute(ctx context.Context, p engineapi.ExecuteParams) engineapi.Outcome {
	return m.e.execute(ctx, p)
}

func (m machinery) Complete(ctx context.Context, outcomes []engineapi.Outcome) ([]engineapi.Outcome, error) {
	written, err := m.e.complete(ctx, own(outcomes))
	return apiOutcomes(written), err
}

func (m machinery) CompleteAndContinue(ctx context.Context, outcomes []engineapi.Outcome, keep func(engineapi.Outcome) bool) ([]engineapi.Outcome, []*persistence.Workflow, error) {
	var k func(*outcome) bool
	if keep != nil {
		k = func(o *outcome) bool { return keep(o) }
	}
	written, continued, err := m.e.completeAndContinue(ctx, own(outcomes), k)
	return apiOutcomes(written), continued, err
}

func (m machinery) FailOutcome(o engineapi.Outcome, cause error) engineapi.Outcome {
	return m.e.failOutcome(o.(*outcome), cause)
}

func (m machinery) Recover(ctx context.Context, p engineapi.RecoverParams) (int, error) {
	return m.e.recoverOrphans(ctx, p)
}

func (m machinery) CancelExecutorSteps(executorID int64) int {
	return m.e.cancelExecutorSteps(executorID)
}

func (m machinery) FireSchedules(ctx context.Context, now time.Time) (int, error) {
	return m.e.fireSchedules(ctx, now)
}

func (m machinery) Notifier() *persistence.Notifier { return m.e.notifier }

func (m machinery) Types(group string) []string { return m.e.types(group) }

func (m machinery) StepTimeouts(group string) []persistence.StepTimeout {
	return m.e.stepTimeouts(group)
}

// own turns outcomes back into this package's (each was made by execute or failOutcome).
func own(os []engineapi.Outcome) []*outcome {
	out := make([]*outcome, len(os))
	for i, o := range os {
		out[i] = o.(*outcome)
	}
	return out
}

func apiOutcomes(os []*outcome) []engineapi.Outcome {
	if os == nil {
		return nil
	}
	out := make([]engineapi.Outcome, len(os))
	for i, o := range os {
		out[i] = o
	}
	return out
}
