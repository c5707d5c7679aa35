package pool

import "github.com/cairnflow/cairn/persistence"

// SetAfterClaimForTest makes the claim loop call f with what each claim took, after the claim
// committed and before the pool lists it as held. Call it before Run.
func (w *Worker) SetAfterClaimForTest(f func([]*persistence.Workflow)) { w.afterClaim = f }
