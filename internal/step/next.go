// Package step holds what a step handler returns: the data of package workflow's Next, whose
// constructors (MoveTo, Finish, ...) are the SDK's, and which the engine (internal/engine) reads
// here. workflow.Next is defined on this type, so each side converts without the fields being
// public.
package step

import "time"

// Kind is what a step asks for.
type Kind int

// The kinds of Next; the zero Kind is a Next that no constructor made.
const (
	Move Kind = iota + 1
	Retry
	Manual
	Finish
	Fail
)

// Next is what a step asks for when it returns.
type Next struct {
	kind  Kind
	state string
	at    time.Time
	delay time.Duration
	text  string
	// failure is why the attempt failed although the step went on (see workflow.Next.AfterFailure).
	failure string
}

// New returns a Next of a kind: the state it moves to and when (Move), the delay before it runs
// again (Retry), and its text (the state text, or Fail's reason).
func New(kind Kind, state string, at time.Time, delay time.Duration, text string) Next {
	return Next{kind: kind, state: state, at: at, delay: delay, text: text}
}

// Kind is what the step asks for.
func (n Next) Kind() Kind { return n.kind }

// State is the state a Move goes to.
func (n Next) State() string { return n.state }

// At is when a Move's state runs (zero: now).
func (n Next) At() time.Time { return n.at }

// Delay is how long a Retry waits.
func (n Next) Delay() time.Duration { return n.delay }

// Text is the state text recorded with the change, or Fail's reason.
func (n Next) Text() string { return n.text }

// Failure is the Problem of an attempt that failed although the step went on ("" when it did not).
func (n Next) Failure() string { return n.failure }

// WithText returns n with its text set.
func (n Next) WithText(text string) Next { n.text = text; return n }

// WithFailure returns n with its failure set.
func (n Next) WithFailure(problem string) Next { n.failure = problem; return n }
