package workflow

import (
	"slices"

	"github.com/cairnflow/cairn/persistence"
)

// TakesSignals reports whether a WAIT state waits for a signal (of one name, several, or any).
func (w *WaitFor) TakesSignals() bool {
	return w.Signal != "" || len(w.Signals) > 0 || w.AnySignal
}

// Names are the signal names a WAIT state takes (nil: any name).
func (w *WaitFor) Names() []string {
	if w.AnySignal {
		return nil
	}
	out := []string{}
	if w.Signal != "" {
		out = append(out, w.Signal)
	}
	for _, n := range w.Signals {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Takes reports whether a WAIT state takes a signal of a name.
func (w *WaitFor) Takes(name string) bool {
	return w.AnySignal || slices.Contains(w.Names(), name)
}

// Column is what the workflow row records of what it waits for (wait_signal): the one name it
// takes, or persistence.WaitSignalAmong for several names or any.
func (w *WaitFor) Column() string {
	if names := w.Names(); len(names) == 1 {
		return names[0]
	}
	return persistence.WaitSignalAmong
}
