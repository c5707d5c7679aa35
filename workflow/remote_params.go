// The remote task protocol's parameters and results: what a remote worker polls with, what it gets,
// and how it says a task ended.

package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairnflow/cairn/persistence"
)

// The limits of the remote task protocol.
const (
	// MaxPollTasks is the most tasks one poll may lease (max).
	MaxPollTasks = 100
	// MinTaskLease and MaxTaskLease bound a lease (leaseMs); DefaultTaskLease is used when a poll
	// names none.
	MinTaskLease     = time.Second
	MaxTaskLease     = time.Hour
	DefaultTaskLease = 30 * time.Second
	// MaxPollWait bounds how long a poll waits for a task (waitMs); 0, the default, does not wait.
	MaxPollWait = 60 * time.Second
	// MaxPollFunctions bounds the functions one poll names.
	MaxPollFunctions = 100
	// MaxTaskOutputBytes bounds a task's output (its JSON text) and a failure's problem.
	MaxTaskOutputBytes = 512 << 10
)

// PollTasksParams is the input of PollTasks.
type PollTasksParams struct {
	Functions []string
	// Max, WaitMs and LeaseMs are nil when the caller gave none (defaults: 1, 0, 30000).
	Max     *int
	WaitMs  *int
	LeaseMs *int
	// Worker names the worker (for the list of workers and the task instances); "" is "unnamed".
	Worker string
	// Allowed, when not nil, are the only functions the caller may serve (a worker token's).
	Allowed []string
}

// LeasedTask is a task a poll leased, with the token that holds it.
type LeasedTask struct {
	*persistence.RemoteTask
	Token string
}

// TaskFailure is how a worker says a task failed: an RFC 7807 problem.
type TaskFailure struct {
	Type   string
	Status *int
	Title  string
	Detail string
}

// MaxCompleteTasks bounds the results one CompleteTasks call writes.
const MaxCompleteTasks = 500

// TaskResult is one task's output, for CompleteTasks.
type TaskResult struct {
	Token  string
	Output json.RawMessage
}

// EndedTask is what CompleteTasks did with one result: Task is the task as written, or nil when
// the token no longer held it (a conflict: nothing was written for it). ID is the token's task.
type EndedTask struct {
	ID   int64
	Task *persistence.RemoteTask
}

// ErrRemotePending is what StepContext.CallRemote returns while the remote task it asked for has
// not ended: the handler returns it as its error, and the workflow waits (WAITING, holding no
// worker slot) until a remote worker completes or fails the task; then the step runs again and
// CallRemote returns the task's result.
var ErrRemotePending = errors.New("the remote task has not ended yet")

// RemoteError is how a remote task failed: a worker's failTask (an RFC 7807 problem), or its
// leases running out more often than the state's retry policy allows.
type RemoteError struct {
	Function string `json:"-"`
	Type     string `json:"type,omitempty"`
	Status   int    `json:"status,omitempty"`
	Title    string `json:"title,omitempty"`
	Detail   string `json:"detail,omitempty"`
	// Retryable says whether running the task again may help (the worker said so).
	Retryable bool `json:"-"`
	// Attempt is the attempt that failed.
	Attempt int `json:"-"`
}

// Error says which function failed, on which attempt, and how.
func (e *RemoteError) Error() string {
	msg := fmt.Sprintf("remote function %s failed (attempt %d)", e.Function, e.Attempt)
	if e.Title != "" {
		msg += ": " + e.Title
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Problem types of the failures cairn itself gives remote tasks.
const (
	// RemoteLeaseExpiredType: every attempt's lease ran out without a result.
	RemoteLeaseExpiredType = "https://serverlessworkflow.io/spec/1.0.0/errors/timeout"
	// RemoteFailedType: the worker failed the task and named no type.
	RemoteFailedType = "https://serverlessworkflow.io/spec/1.0.0/errors/runtime"
)
