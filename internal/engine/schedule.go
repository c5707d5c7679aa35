package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/workflow"
)

// CreateSchedule stores a schedule that starts a workflow of a type on a cron expression, in a
// time zone, between optional start and end times. An expression that never fires, an `@every`
// interval below MinScheduleInterval, a time zone inside the expression and the zone "Local" are
// refused; a name another schedule has is a CONFLICT. The audit entry commits with the schedule.
func (e *Engine) CreateSchedule(ctx context.Context, p workflow.ScheduleParams) (*persistence.Schedule, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if _, err := e.store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: p.Type}); errors.Is(err, persistence.ErrNotFound) {
		return nil, invalid("type", "no workflow definition of type %q", p.Type)
	} else if err != nil {
		return nil, err
	}
	sc := &persistence.Schedule{Name: p.Name, DefinitionType: p.Type, Cron: p.Cron, Timezone: p.Timezone, StartAt: p.StartAt,
		EndAt: p.EndAt, Priority: p.Priority, OverlapPolicy: p.OverlapPolicy, AlertRuleID: p.AlertRuleID}
	if err := e.checkScheduleAlertRule(ctx, p.AlertRuleID); err != nil {
		return nil, err
	}
	if p.Input == nil {
		p.Input = []byte("{}")
	}
	if err := e.prepareSchedule(sc, p.Input); err != nil {
		return nil, err
	}
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		if err := tx.ScheduleInsert(ctx, sc); err != nil {
			return nameConflict(err, sc.Name)
		}
		return audit(ctx, tx, p.Actor, "createSchedule", subjectOf("Schedule", sc.ID), "", scheduleDetails(sc))
	})
	if err != nil {
		return nil, err
	}
	if sc.AlertRuleID != nil {
		e.store.AlertRulesChanged()
	}
	return sc, nil
}

// prepareSchedule checks a schedule's fields and normalizes them (its time zone's name, the cron
// expression trimmed, the overlap policy upper-cased, SKIP by default, times in UTC), sets its
// input from rawInput (a JSON object) and computes its next fire from now (none while paused).
func (e *Engine) prepareSchedule(sc *persistence.Schedule, rawInput []byte) error {
	loc, err := loadTimezone(sc.Timezone)
	if err != nil {
		return err
	}
	sc.Timezone = loc.String()
	now := persistence.Now()
	sc.Cron = strings.TrimSpace(sc.Cron)
	if _, err := parseCron(sc.Cron, loc, now); err != nil {
		return err
	}
	_, input, err := decodeObject("input", rawInput)
	if err != nil {
		return err
	}
	if err := checkValue(e.limits, "input", input); err != nil {
		return err
	}
	sc.Input = input
	policy := strings.ToUpper(sc.OverlapPolicy)
	if policy == "" {
		policy = workflow.OverlapSkip
	}
	if policy != workflow.OverlapSkip && policy != workflow.OverlapAllow {
		return invalid("overlapPolicy", "must be SKIP or ALLOW, not %q", sc.OverlapPolicy)
	}
	sc.OverlapPolicy = policy
	if sc.StartAt != nil && sc.EndAt != nil && !sc.EndAt.After(*sc.StartAt) {
		return invalid("endAt", "must be after startAt")
	}
	sc.StartAt, sc.EndAt = persistence.UTCPtr(sc.StartAt), persistence.UTCPtr(sc.EndAt)
	sc.NextFire = nil
	if sc.Paused {
		return nil
	}
	if sc.NextFire = nextFire(sc, now); sc.NextFire == nil {
		return invalid("endAt", "the schedule has no fire time before its end")
	}
	return nil
}

// SetSchedulePaused pauses a schedule (it fires no more, and has no next fire) or resumes it (from
// now on: fires missed while paused are not made up).
func (e *Engine) SetSchedulePaused(ctx context.Context, id int64, paused bool) (*persistence.Schedule, error) {
	return e.SetSchedulePausedBy(ctx, id, paused, "")
}

// SetSchedulePausedBy is SetSchedulePaused by an actor: the audit entry commits with the change.
func (e *Engine) SetSchedulePausedBy(ctx context.Context, id int64, paused bool, actor string) (*persistence.Schedule, error) {
	return e.changeSchedule(ctx, id, actor, "setSchedulePaused", func(sc *persistence.Schedule) error {
		sc.Paused = paused
		sc.NextFire = nil
		if !paused {
			sc.NextFire = nextFire(sc, persistence.Now())
		}
		return nil
	})
}

// Limits of firing schedules.
const (
	// ScheduleCatchUp is how late a fire time may be and still start its run: fire times a node
	// reaches later (the node was down or behind) are skipped and counted, except that a
	// schedule all of whose due fire times are that late starts one run for the latest.
	ScheduleCatchUp = time.Minute
	// scheduleBatch is how many due schedules one read returns; fireSchedules reads until none is due.
	scheduleBatch = 100
	// maxCountedSkips bounds the fire times counted one by one after a long stop (an @every 1s
	// schedule stopped for a year has 31 million); the rest are passed over uncounted.
	maxCountedSkips = 100_000
)

// FireSchedules starts the runs of every schedule due at now, and returns how many it started. It
// reads due schedules until none is left, so that a schedule waits for no other: each tick fires
// every due fire time of every schedule (an @every 1s schedule fires twice on a 2 s tick).
//
// Several nodes may call it at once and see the same fire (ScheduleDue locks nothing beyond its
// own statement). What prevents a double fire is the database's keys, not a lock: a fire's run is
// started with the idempotency key "schedule:ID:UNIX-TIME", unique in idempotency_keys (the
// second node's start returns the first node's workflow, Created false, and is not counted), and
// ScheduleAdvance moves next_fire on (and counts the skipped fires) only where it still holds the
// fire time (a conditional update), so a fire is never taken as pending again once one node
// advanced it.
func (e *Engine) FireSchedules(ctx context.Context, now time.Time) (int, error) {
	started := 0
	for {
		due, err := e.store.ScheduleDue(ctx, now, scheduleBatch)
		if err != nil {
			return started, err
		}
		for _, sc := range due {
			n, err := e.fireSchedule(ctx, sc, now)
			started += n
			if err != nil {
				return started, err
			}
		}
		if len(due) < scheduleBatch {
			return started, nil
		}
	}
}

// fireSchedule starts the runs of one due schedule's fire times up to now and moves it on.
func (e *Engine) fireSchedule(ctx context.Context, sc *persistence.Schedule, now time.Time) (int, error) {
	first := *sc.NextFire
	fires, skipped := dueFires(sc, now)
	token := fmt.Sprintf("schedule:%d", sc.ID)
	running := false
	if sc.OverlapPolicy == workflow.OverlapSkip {
		var err error
		if running, err = e.store.WorkflowRunningWithLaunchToken(ctx, token); err != nil {
			return 0, err
		}
	}
	started := 0
	for _, fire := range fires {
		// Under SKIP a run started here is still going at the next fire time of the same tick.
		if running {
			skipped++
			continue
		}
		res, err := e.Start(ctx, workflow.StartParams{Type: sc.DefinitionType, Input: sc.Input, Priority: sc.Priority, LaunchToken: token,
			IdempotencyKey: fmt.Sprintf("%s:%d", token, fire.Unix())})
		if err != nil {
			e.log.Warn("a schedule could not start its workflow", "schedule", sc.ID, "type", sc.DefinitionType, "error", err)
			continue
		}
		if res.Created {
			started++
		}
		running = sc.OverlapPolicy == workflow.OverlapSkip
	}
	last := fires[len(fires)-1]
	if _, err := e.store.ScheduleAdvance(ctx, sc.ID, first, &last, nextFire(sc, now), skipped); err != nil {
		return started, err
	}
	return started, nil
}

// dueFires returns the fire times of a due schedule up to now that start a run (at least one),
// and how many earlier ones are too late to (more than ScheduleCatchUp ago).
func dueFires(sc *persistence.Schedule, now time.Time) ([]time.Time, int64) {
	var fires []time.Time
	var late int64
	var lastLate time.Time
	for next := sc.NextFire; next != nil && !next.After(now); next = nextFire(sc, *next) {
		if now.Sub(*next) <= ScheduleCatchUp {
			fires = append(fires, *next)
			continue
		}
		late++
		lastLate = *next
		if late == maxCountedSkips {
			// Count no further: jump to the fire times still within the catch-up window.
			next = nextFire(sc, now.Add(-ScheduleCatchUp-time.Nanosecond))
			for ; next != nil && !next.After(now); next = nextFire(sc, *next) {
				fires = append(fires, *next)
			}
			break
		}
	}
	if len(fires) == 0 {
		// Every due fire time is late (the node was stopped): one run makes up for them.
		return []time.Time{lastLate}, late - 1
	}
	return fires, late
}

// nextFire is the schedule's first fire time after a time, within its start and end (nil: none).
func nextFire(sc *persistence.Schedule, after time.Time) *time.Time {
	sched, err := cronParser.Parse(sc.Cron)
	if err != nil {
		return nil
	}
	loc, err := time.LoadLocation(sc.Timezone)
	if err != nil {
		loc = time.UTC
	}
	from := after
	if sc.StartAt != nil && sc.StartAt.After(from) {
		from = sc.StartAt.Add(-time.Nanosecond)
	}
	next := persistence.UTC(sched.Next(from.In(loc)))
	// A fire past MaxTime could not be stored: such a schedule has fired for the last time.
	if next.IsZero() || next.After(workflow.MaxTime) || (sc.EndAt != nil && next.After(*sc.EndAt)) {
		return nil
	}
	return &next
}

// maxBackfill bounds how many runs one backfill starts.
const maxBackfill = 1000

// BackfillSchedule starts the runs a schedule would have started for its fire times in [from, to]
// (at most 1000), in one bulk start. Each run has the idempotency key a live fire at that time
// uses, so a time that fired already, or is backfilled twice, starts nothing again. It returns the
// runs, with Created false for those that existed.
func (e *Engine) BackfillSchedule(ctx context.Context, id int64, from, to time.Time) ([]workflow.StartResult, error) {
	if err := checkRange(from, to); err != nil {
		return nil, err
	}
	sc, err := e.store.ScheduleGet(ctx, id)
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, notFound("id", "no schedule %v", scheduleRef(id))
	} else if err != nil {
		return nil, err
	}
	if !to.After(from) {
		return nil, invalid("to", "must be after from")
	}
	// A future fire backfilled now would start early, and its live fire would then start nothing.
	if to.After(persistence.Now()) {
		return nil, invalid("to", "must not be in the future: backfill starts the runs of a past range")
	}
	def, err := e.store.DefinitionGet(ctx, persistence.DefinitionGetParams{Type: sc.DefinitionType})
	if err != nil {
		return nil, fmt.Errorf("error reading the definition of schedule %d: %w", sc.ID, err)
	}
	if err := startable(def, "id"); err != nil {
		return nil, err
	}
	var ps []workflow.StartParams
	token := fmt.Sprintf("schedule:%d", sc.ID)
	for next := nextFire(sc, from.Add(-time.Nanosecond)); next != nil && !next.After(to); next = nextFire(sc, *next) {
		if len(ps) == maxBackfill {
			return nil, invalid("to", "the range holds more than %d fire times; backfill it in parts", maxBackfill)
		}
		ps = append(ps, workflow.StartParams{Type: sc.DefinitionType, Input: sc.Input, Priority: sc.Priority, LaunchToken: token,
			IdempotencyKey: fmt.Sprintf("%s:%d", token, next.Unix())})
	}
	return e.StartMany(ctx, ps)
}
