package graph

import (
	"context"
	"errors"
	"strings"

	"github.com/cairnflow/cairn/persistence"
)

// TokenFunctions splits a token's comma-separated functions (empty for tokens without).
func TokenFunctions(t *persistence.APIToken) []string {
	out := []string{}
	if t.Functions == nil {
		return out
	}
	for _, f := range strings.Split(*t.Functions, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// scheduleByIDOrName looks a schedule up by exactly one of its ID and its name; nil when there is
// none.
func (r *Resolver) scheduleByIDOrName(ctx context.Context, id, name *string) (*persistence.Schedule, error) {
	if (id == nil) == (name == nil) {
		return nil, invalidInput("id", "give exactly one of id and name")
	}
	var sc *persistence.Schedule
	var err error
	if id != nil {
		var rowID int64
		if rowID, err = decodeID("id", kindSchedule, *id); err != nil {
			return nil, err
		}
		sc, err = r.engine.Schedule(ctx, rowID)
	} else {
		sc, err = r.engine.ScheduleByName(ctx, *name)
	}
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, nil
	}
	return sc, err
}
