package serverless_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// A switch takes the first case, in document order, whose `when` holds (Serverless Workflow 1.0),
// so cases may overlap: here every case that follows a matching one matches too, and a switch that
// looked at its cases in any other order would take a later one.
func TestSwitchTakesTheFirstMatchingCaseOfOverlappingOnes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNode(t, store)
		n.startWorker(t)
		def := n.deploy(t, `
document: {dsl: '1.0.0', namespace: test, name: overlap, version: '1.0.0'}
do:
  - route:
      switch:
        - huge: {when: '.size > 100', then: huge}
        - big: {when: '.size > 10', then: big}
        - any: {when: '.size > 0', then: small}
        - otherwise: {then: none}
  - huge:
      set: {size: huge}
      then: end
  - big:
      set: {size: big}
      then: end
  - small:
      set: {size: small}
      then: end
  - none:
      set: {size: none}
`)
		for input, want := range map[string]string{`{"size": 500}`: "huge", `{"size": 50}`: "big", `{"size": 5}`: "small", `{"size": 0}`: "none"} {
			w := n.waitEnded(t, n.start(t, def.Type, input).ID)
			require.Equal(t, persistence.StatusFinished, w.Status, "lastError: %s", lastError(w))
			require.Equal(t, map[string]any{"size": want}, output(t, w), "input %s", input)
		}
	})
}
