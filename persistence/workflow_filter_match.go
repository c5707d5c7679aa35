package persistence

import (
	"slices"
	"time"
)

// Matches reports whether a workflow passes the filter, with the same meaning as the SQL that
// WorkflowList runs for it (see apply): live subscriptions filter in memory what the workflows
// query filters in the database, and the two must agree on every row.
func (f WorkflowFilter) Matches(w *Workflow) bool {
	if w == nil {
		return false
	}
	return f.MatchesChange(w, w.Status, w.State)
}

// MatchesChange is Matches for a change of a workflow: status and state are the ones the change
// left it in (a change event's), the other fields the workflow's.
func (f WorkflowFilter) MatchesChange(w *Workflow, status Status, state string) bool {
	return (len(f.IDs) == 0 || slices.Contains(f.IDs, w.ID)) &&
		(len(f.Types) == 0 || slices.Contains(f.Types, w.Type)) &&
		(len(f.Statuses) == 0 || slices.Contains(f.Statuses, status)) &&
		(len(f.States) == 0 || slices.Contains(f.States, state)) &&
		equalIfSet(f.ExternalID, w.ExternalID) &&
		equalIfSet(f.BusinessKey, w.BusinessKey) &&
		equalIfSet(f.ParentID, w.ParentID) &&
		equalIfSet(f.RootID, w.RootID) &&
		(f.TopLevel == nil || *f.TopLevel == (w.ParentID == nil)) &&
		(f.ExecutorGroup == nil || *f.ExecutorGroup == w.ExecutorGroup) &&
		(len(f.ExecutorIDs) == 0 || (w.ExecutorID != nil && slices.Contains(f.ExecutorIDs, *w.ExecutorID))) &&
		(f.CreatedAfter == nil || w.Created.After(storedTime(*f.CreatedAfter))) &&
		(f.CreatedBefore == nil || w.Created.Before(storedTime(*f.CreatedBefore))) &&
		matchAttributes(f.Attributes, w.Attributes)
}

// OnlyEventFields reports whether the filter reads nothing but a workflow's ID, status and state,
// which a change event carries itself: such a filter can judge an event whose workflow is gone.
func (f WorkflowFilter) OnlyEventFields() bool {
	return len(f.Types) == 0 && f.ExternalID == nil && f.BusinessKey == nil && f.ParentID == nil &&
		f.RootID == nil && f.TopLevel == nil && f.ExecutorGroup == nil && len(f.ExecutorIDs) == 0 && f.CreatedAfter == nil &&
		f.CreatedBefore == nil && len(f.Attributes) == 0 && f.Stuck == nil
}

// equalIfSet reports whether an optional filter value is absent or equals the row's (SQL's
// "column = ?" is never true for a NULL column).
func equalIfSet[T comparable](want, got *T) bool {
	return want == nil || (got != nil && *got == *want)
}

// storedTime is t as the database compares it: in UTC (the SQL filter binds UTC(t)).
func storedTime(t time.Time) time.Time { return UTC(t) }
