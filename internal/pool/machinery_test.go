package pool_test

import "github.com/cairnflow/cairn/internal/engine"

// Names of the engine's machinery for tests whose engine variable hides the package's name.
type (
	executeParams = engine.ExecuteParams
	recoverParams = engine.RecoverParams
	outcome       = engine.Outcome
)
