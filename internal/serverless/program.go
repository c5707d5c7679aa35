package serverless

import (
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/cairnflow/cairn/workflow"
)

// The kinds of task cairn runs.
const (
	kindRoot    = "workflow" // the document itself: its `do` list, input and output
	kindSet     = "set"
	kindSwitch  = "switch"
	kindFor     = "for"
	kindDo      = "do"
	kindTry     = "try"
	kindRaise   = "raise"
	kindWait    = "wait"
	kindListen  = "listen"
	kindEmit    = "emit"
	kindCall    = "call"    // call: http
	kindOpenAPI = "openapi" // call: openapi
	kindGRPC    = "grpc"    // call: grpc
	kindRun     = "run"     // run: workflow
	kindFork    = "fork"    // its branches run as child workflows of the same definition version
)

// composite reports whether a kind holds task lists of its own; such a task is structure, entered
// and left by the steps of the tasks around it, and only the tasks in its lists are states.
func composite(kind string) bool {
	return kind == kindRoot || kind == kindDo || kind == kindFor || kind == kindTry || kind == kindExt
}

// program is a compiled document: the tree of its tasks.
type program struct {
	typ   string
	label string
	title string
	root  *task
	// leaves are the tasks that run as states, in document order.
	leaves  []*task
	byPath  map[string]*task
	http    *httpRunner
	secrets map[string]any
	redact  *redactor // keeps the secrets' values out of what workflows store
	// functions are the Go Functions of this node, by name.
	functions map[string]Function
	// exprs is the budget of each expression's evaluation.
	exprs ExpressionOptions
	// flow is the document's flow control (document.metadata.flowControl).
	flow *workflow.FlowControl
	// sched is the document's schedule (schedule.go).
	sched scheduleSpec
	// run bounds the processes of run: shell and run: script tasks.
	run RunOptions
	// grpc bounds call: grpc tasks.
	grpc GRPCOptions
	// doc is the document as parsed ($workflow.definition); runtime is $runtime's.
	doc     map[string]any
	runtime RuntimeOptions
	// usesTask says an expression of the document reads $task: the start of each task and a
	// composite task's raw input are then kept.
	usesTask bool
	// exts are the document's extensions (extension.go).
	exts []*extSpec
	// async bounds call: asyncapi tasks.
	async AsyncAPIOptions
}

// taskList is one list of tasks (a `do`, a `try`, a `catch.do`) and the task that owns it.
type taskList struct {
	path  string
	owner *task
	tasks []*task
	// catch marks a try task's catch.do list.
	catch bool
	// fork marks a fork task's branches: each task runs on its own, as a child workflow.
	fork bool
}

// byName returns the task of the list with a name.
func (l *taskList) byName(name string) *task {
	for _, t := range l.tasks {
		if t.name == name {
			return t
		}
	}
	return nil
}

// task is one compiled task.
type task struct {
	name  string
	path  string // its JSON pointer in the document, and the name of its state
	kind  string
	def   map[string]any // the task's definition as parsed ($task.definition)
	list  *taskList      // the list it belongs to (nil for the root)
	index int

	cond         *expr // if
	inputSchema  *jsonschema.Schema
	outputSchema *jsonschema.Schema
	exportSchema *jsonschema.Schema
	inputFrom    *template // input.from
	outputAs     *template // output.as
	exportAs     *template // export.as
	then         string    // "" (continue), continue, exit, end, or a sibling's name
	timeout      time.Duration

	set        *template
	cases      []switchCase
	forEach    string
	forAt      string
	forIn      *expr
	itemsOut   bool // the loop's output is its items (a subscription's foreach), not its data
	while      *expr
	body       *taskList // do, for, root: the tasks it runs; try: its try list
	catch      *catchSpec
	raise      *template // the error's fields
	wait       time.Duration
	listenSpec *listenSpec
	emit       *template
	http       *httpCall
	openapi    *openapiCall
	grpc       *grpcCall
	async      *asyncCall // call: asyncapi
	run        *runWorkflow
	fork       *forkSpec
	function   *functionCall
	process    *processSpec
	// exts are the extensions that may apply to the task, in the order declared; ext is the
	// extension whose list a kindExt task owns (extension.go).
	exts []int
	ext  *extSpec
}

type switchCase struct {
	name string
	when *expr // nil: the default case
	then string
}

// catchSpec is a try task's catch.
type catchSpec struct {
	filter     map[string]any // errors.with
	as         string
	when       *expr
	exceptWhen *expr
	retry      *retrySpec
	do         *taskList
}

// retrySpec is a retry policy of a catch.
type retrySpec struct {
	when       *expr
	exceptWhen *expr
	delay      time.Duration
	backoff    string // constant, linear, exponential
	maxRetries int    // limit.attempt.count; -1: unlimited
	limit      time.Duration
	jitterFrom time.Duration
	jitterTo   time.Duration
}
