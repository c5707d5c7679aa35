// Package remoteworker is a thin Go client of cairn's remote task protocol, for Go services that
// serve functions cairn's workflows call: Poll leases tasks (long-polling), Heartbeat extends a
// lease, Complete and Fail end a task, and Run does all of it in a loop with a handler per
// function. It talks to a cairn node's GraphQL endpoint over HTTP and needs nothing else of cairn.
package remoteworker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Client calls one cairn GraphQL endpoint.
type Client struct {
	endpoint string
	token    string
	http     *http.Client
}

// Options configures a Client.
type Options struct {
	// Token is the API token sent as a bearer token (a worker token: cairn token create --role
	// worker --functions ...); empty sends none.
	Token string
	// HTTPClient makes the requests (when nil, a client without a timeout, keeping up to 64 idle
	// connections: a long poll's request lasts up to its waitMs, and ends with its context).
	HTTPClient *http.Client
}

// New returns a client of the GraphQL endpoint at url (http://host:port/graphql).
func New(url string, opts Options) *Client {
	hc := opts.HTTPClient
	if hc == nil {
		// A worker completes its tasks concurrently: keep a connection for each, not the
		// default two (the others would be closed and dialled again for every request).
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		hc = &http.Client{Transport: t}
	}
	return &Client{endpoint: url, token: opts.Token, http: hc}
}

// Error is an error the API answered with: its extensions.code (INVALID_INPUT, CONFLICT,
// FORBIDDEN, ...) and the input field at fault.
type Error struct {
	Code    string
	Field   string
	Message string
}

// Error is the code, the field at fault and the message.
func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s (%s): %s", e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// IsConflict reports whether err says the lease is lost: the task was offered again after the
// lease ran out, or it already ended. Nothing was written; drop the task.
func IsConflict(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == "CONFLICT"
}

// Do posts one GraphQL request and decodes its data into out: for an operation the client has no
// method for. An error the API answered with is an *Error.
func (c *Client) Do(ctx context.Context, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return fmt.Errorf("error encoding a request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("error making a request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("error calling %s: %w", c.endpoint, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("error reading the answer of %s: %w", c.endpoint, err)
	}
	var r struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message    string `json:"message"`
			Extensions struct {
				Code  string `json:"code"`
				Field string `json:"field"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("error decoding the answer of %s (HTTP %d): %w", c.endpoint, resp.StatusCode, err)
	}
	if len(r.Errors) > 0 {
		e := r.Errors[0]
		return &Error{Code: e.Extensions.Code, Field: e.Extensions.Field, Message: e.Message}
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		return fmt.Errorf("error decoding the data of %s: %w", c.endpoint, err)
	}
	return nil
}

// Task is a leased task: call its function with Input, then Complete or Fail it with Token.
type Task struct {
	ID       string          `json:"id"`
	Token    string          `json:"token"`
	Function string          `json:"function"`
	Input    json.RawMessage `json:"input"`
	Attempt  int             `json:"attempt"`
	Deadline time.Time       `json:"deadline"`
	Workflow struct {
		ID string `json:"id"`
	} `json:"workflow"`
}

// PollParams is the input of Poll; zero values take the server's defaults.
type PollParams struct {
	Functions []string
	Max       int
	WaitMs    int
	LeaseMs   int
	Worker    string
}

// Poll leases up to Max tasks of the functions, waiting up to WaitMs for one.
func (c *Client) Poll(ctx context.Context, p PollParams) ([]Task, error) {
	in := map[string]any{"functions": p.Functions}
	for k, v := range map[string]int{"max": p.Max, "waitMs": p.WaitMs, "leaseMs": p.LeaseMs} {
		if v != 0 {
			in[k] = v
		}
	}
	if p.Worker != "" {
		in["worker"] = p.Worker
	}
	var out struct {
		PollTasks struct {
			Tasks []Task `json:"tasks"`
		} `json:"pollTasks"`
	}
	err := c.Do(ctx, `mutation($in: PollTasksInput!) { pollTasks(input: $in) { tasks { id token function input attempt deadline workflow { id } } } }`,
		map[string]any{"in": in}, &out)
	return out.PollTasks.Tasks, err
}

// Heartbeat extends a lease and returns its new deadline; a lost lease is a CONFLICT Error.
func (c *Client) Heartbeat(ctx context.Context, token string) (time.Time, error) {
	var out struct {
		HeartbeatTask struct {
			Deadline time.Time `json:"deadline"`
		} `json:"heartbeatTask"`
	}
	err := c.Do(ctx, `mutation($t: String!) { heartbeatTask(input: {token: $t}) { deadline } }`, map[string]any{"t": token}, &out)
	return out.HeartbeatTask.Deadline, err
}

// Complete ends a task with its output (any value that encodes as JSON).
func (c *Client) Complete(ctx context.Context, token string, output any) error {
	raw, err := json.Marshal(output)
	if err != nil {
		return fmt.Errorf("error encoding a task's output: %w", err)
	}
	var out json.RawMessage
	return c.Do(ctx, `mutation($t: String!, $o: JSON) { completeTask(input: {token: $t, output: $o}) { id } }`,
		map[string]any{"t": token, "o": json.RawMessage(raw)}, &out)
}

// Result is one task's output, for CompleteMany.
type Result struct {
	Token  string
	Output any
}

// CompleteMany ends many tasks with their outputs in one request (at most 500), which cairn writes
// in one transaction. Bad input (output that cannot be stored, a token that is not a task token)
// refuses the whole call: err is the API's Error, naming the result (results[2].output), and
// nothing is written. Otherwise each result gets its own error in errs, in order: nil when it was
// written, a CONFLICT Error when its token no longer held its task (drop that task).
func (c *Client) CompleteMany(ctx context.Context, results []Result) (errs []error, err error) {
	in := make([]map[string]any, len(results))
	for i, r := range results {
		raw, err := json.Marshal(r.Output)
		if err != nil {
			return nil, fmt.Errorf("error encoding the output of result %d: %w", i, err)
		}
		in[i] = map[string]any{"token": r.Token, "output": json.RawMessage(raw)}
	}
	var out struct {
		CompleteTasks struct {
			Results []struct {
				ID   string  `json:"id"`
				Code *string `json:"code"`
			} `json:"results"`
		} `json:"completeTasks"`
	}
	if err := c.Do(ctx, `mutation($r: [CompleteTaskInput!]!) { completeTasks(input: {results: $r}) { results { id code } } }`,
		map[string]any{"r": in}, &out); err != nil {
		return nil, err
	}
	if len(out.CompleteTasks.Results) != len(results) {
		return nil, fmt.Errorf("completeTasks answered %d items for %d results", len(out.CompleteTasks.Results), len(results))
	}
	errs = make([]error, len(results))
	for i, item := range out.CompleteTasks.Results {
		if item.Code != nil {
			errs[i] = &Error{Code: *item.Code, Field: fmt.Sprintf("results[%d].token", i), Message: "the lease is lost: it ran out or the task already ended"}
		}
	}
	return errs, nil
}

// Failure is a task's error as RFC 7807 problem details. A handler returns one to say how its task
// failed and whether a retry may help; any other error fails the task as retryable.
type Failure struct {
	Type      string
	Status    int
	Title     string
	Detail    string
	Retryable bool
}

// Error is the failure's title and detail.
func (f *Failure) Error() string { return f.Title + ": " + f.Detail }

// Fail ends a task with an error.
func (c *Client) Fail(ctx context.Context, token string, f Failure) error {
	problem := map[string]any{"title": f.Title, "detail": f.Detail}
	if f.Type != "" {
		problem["type"] = f.Type
	}
	if f.Status != 0 {
		problem["status"] = f.Status
	}
	var out json.RawMessage
	return c.Do(ctx, `mutation($t: String!, $e: TaskErrorInput!, $r: Boolean) { failTask(input: {token: $t, error: $e, retryable: $r}) { id } }`,
		map[string]any{"t": token, "e": problem, "r": f.Retryable}, &out)
}
