package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/graph/internal/request"
)

// sseTransport serves subscriptions (and any operation) as Server-Sent Events, the way a
// browser's EventSource asks for them: GET /graphql?query=...&variables=... or POST with a JSON
// body, each with Accept: text/event-stream. Every event of workflowEvents carries an "id:" line
// holding its cursor, so that an EventSource that reconnects sends it back as Last-Event-ID and
// the stream resumes after it, with nothing missed and nothing repeated. The stream ends with
// "event: complete" (graphql-sse's distinct-connections mode).
type sseTransport struct {
	pingInterval time.Duration
}

var _ graphql.Transport = sseTransport{}

// Supports takes requests that accept an event stream: GET, or POST with a JSON body.
func (sseTransport) Supports(r *http.Request) bool {
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		return false
	}
	if r.Method == http.MethodGet {
		return true
	}
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && r.Method == http.MethodPost && mediaType == "application/json"
}

// Do runs the operation and writes each response as one event.
func (t sseTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "INTERNAL", "streaming is not supported here")
		return
	}
	start := graphql.Now()
	params, err := sseParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, codeBadRequest, err.Error())
		return
	}
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	ids := &request.EventIDs{}
	ctx = request.WithEventIDs(ctx, ids, r.Header.Get("Last-Event-ID"))

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	var mu sync.Mutex // the pinger and the events write to one stream
	write := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = io.WriteString(w, s)
		flusher.Flush()
	}
	write(":\n\n")
	if t.pingInterval > 0 {
		pingCtx, stop := context.WithCancel(ctx)
		pinged := make(chan struct{})
		// The pinger is done before the handler returns: a write after it would flush a
		// response the server has already finished (a crash, not only a race).
		defer func() { stop(); <-pinged }()
		go func() {
			defer close(pinged)
			tick := time.NewTicker(t.pingInterval)
			defer tick.Stop()
			for {
				select {
				case <-pingCtx.Done():
					return
				case <-tick.C:
					write(": ping\n\n")
				}
			}
		}()
	}

	rc, opErr := exec.CreateOperationContext(ctx, params)
	if opErr != nil {
		write(sseEvent("", exec.DispatchError(graphql.WithOperationContext(ctx, rc), opErr)))
	} else {
		if rc.Operation != nil && rc.Operation.Operation == ast.Subscription {
			graph.SetResponseSender(rc, sseSender{ids: ids, write: write})
		}
		ctx = graphql.WithOperationContext(ctx, rc)
		responses, dispatchCtx := exec.DispatchOperation(ctx, rc)
		for {
			resp := responses(dispatchCtx)
			if resp == nil {
				break
			}
			write(sseEvent(ids.Pop(), resp))
		}
	}
	if ctx.Err() == nil {
		write("event: complete\ndata:\n\n")
	}
}

// sseEvent formats one response as a "next" event, with an id line when it has a cursor.
func sseEvent(id string, resp *graphql.Response) string {
	data, err := json.Marshal(resp)
	if err != nil {
		data = []byte(`{"errors":[{"message":"the response could not be encoded","extensions":{"code":"INTERNAL"}}]}`)
	}
	return nextEvent(id, data)
}

// nextEvent is the "next" event whose data is the concatenated JSON parts (JSON holds no raw
// newline), with an id line when id is set.
func nextEvent(id string, parts ...[]byte) string {
	var b strings.Builder
	n := 32 + len(id)
	for _, p := range parts {
		n += len(p)
	}
	b.Grow(n)
	b.WriteString("event: next\n")
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	b.WriteString("data: ")
	for _, p := range parts {
		b.Write(p)
	}
	b.WriteString("\n\n")
	return b.String()
}

// sseSender sends the responses a subscription shares with others of its shape on its stream
// (graph.ResponseSender), as sseEvent would write {"data": data}.
type sseSender struct {
	ids   *request.EventIDs
	write func(string)
}

// SendData writes the event and flushes it.
func (s sseSender) SendData(data []byte) error {
	s.write(nextEvent(s.ids.Pop(), []byte(`{"data":`), data, []byte("}")))
	sentBySenders.Add(1)
	return nil
}

// sseParams reads the GraphQL request from the query string (GET) or the JSON body (POST).
func sseParams(r *http.Request) (*graphql.RawParams, error) {
	p := &graphql.RawParams{}
	if r.Method == http.MethodGet {
		q := r.URL.Query()
		p.Query, p.OperationName = q.Get("query"), q.Get("operationName")
		for name, dst := range map[string]*map[string]any{"variables": &p.Variables, "extensions": &p.Extensions} {
			if v := q.Get(name); v != "" {
				if err := decodeJSONObject([]byte(v), dst); err != nil {
					return nil, fmt.Errorf("%s must be a JSON object", name)
				}
			}
		}
		return p, nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, fmt.Errorf("the request body could not be read")
	}
	if err := decodeJSONObject(body, p); err != nil {
		return nil, fmt.Errorf("the request body is not a GraphQL request")
	}
	return p, nil
}

func decodeJSONObject(data []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(dst)
}
