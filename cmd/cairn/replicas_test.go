package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// routedResponse is a GraphQL response with the headers of read routing.
type routedResponse struct {
	status int
	source string
	token  string
	body   struct {
		Data   json.RawMessage
		Errors []struct {
			Message    string
			Extensions map[string]any
		}
	}
}

// post sends a GraphQL request with headers and returns the response and its routing headers.
func (n *node) post(t *testing.T, query string, variables map[string]any, headers map[string]string) routedResponse {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": variables})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, "http://"+n.addr+"/graphql", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := routedResponse{status: resp.StatusCode, source: resp.Header.Get("Cairn-Read-Source"), token: resp.Header.Get("Cairn-Consistency-Token")}
	require.NoError(t, json.Unmarshal(raw, &out.body), string(raw))
	return out
}

const startOrder = `mutation { startWorkflow(input: {type: "demo.order", input: {amount: 1}}) { workflow { id } } }`

// startedID returns the ID a startWorkflow response carries.
func startedID(t *testing.T, r routedResponse) string {
	t.Helper()
	require.Empty(t, r.body.Errors)
	var d struct {
		StartWorkflow struct{ Workflow struct{ ID string } }
	}
	require.NoError(t, json.Unmarshal(r.body.Data, &d))
	require.NotEmpty(t, d.StartWorkflow.Workflow.ID)
	return d.StartWorkflow.Workflow.ID
}

// sees reads a workflow with a consistency token and says which source served it and whether it
// was found.
func (n *node) sees(t *testing.T, id, token string) (string, bool) {
	t.Helper()
	headers := map[string]string{}
	if token != "" {
		headers["Cairn-Consistency-Token"] = token
	}
	r := n.post(t, `query($id: ID!) { workflow(id: $id) { id } workflows(first: 1) { totalCount } }`, map[string]any{"id": id}, headers)
	require.Equal(t, http.StatusOK, r.status)
	var d struct{ Workflow *struct{ ID string } }
	if len(r.body.Errors) > 0 {
		require.Equal(t, "NOT_FOUND", r.body.Errors[0].Extensions["code"], "%+v", r.body.Errors)
	}
	require.NoError(t, json.Unmarshal(r.body.Data, &d))
	return r.source, d.Workflow != nil
}

// A primary and its streaming standby, both started by the test: read-only queries go to the
// standby, mutations to the primary; a client that sends back its mutation's token reads its own
// write; a standby whose replay is paused past --read-max-lag, or that is down, is skipped.
func TestReadReplicas(t *testing.T) {
	t.Parallel()
	primary := startPrivatePostgres(t)
	standby := startStandby(t, primary)
	r := runCairn(t, "", nil, "migrate", "up", "--database", primary.url)
	require.Zero(t, r.code, r.stderr)

	// Bad input at start.
	r = runCairn(t, "", nil, "serve", "--read-database", standby.url)
	requireOneLineError(t, r, "read replicas need a PostgreSQL --database")
	for url, want := range map[string]string{
		primary.url:                        "is not a replica",
		"mysql://root@127.0.0.1:3306/test": "must be a postgres:// URL",
		fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=5", freeLoopbackPort(t)): "unreachable",
	} {
		r = runCairn(t, "", nil, "serve", "--database", primary.url, "--read-database", url, "--addr", "127.0.0.1:0")
		requireOneLineError(t, r, want)
	}

	n := startNode(t, nil, "--database", primary.url, "--read-database", standby.url, "--read-max-lag", "1s",
		"--demo", "--addr", "127.0.0.1:0", "--log-format", "json")
	bad := n.post(t, `{ workflows(first: 1) { totalCount } }`, nil, map[string]string{"Cairn-Consistency-Token": "yesterday"})
	require.Equal(t, http.StatusBadRequest, bad.status)
	require.Equal(t, "INVALID_INPUT", bad.body.Errors[0].Extensions["code"])
	require.Equal(t, "Cairn-Consistency-Token", bad.body.Errors[0].Extensions["field"])

	// Writes go to the primary and hand out a token; with it, the write is always read back.
	started := n.post(t, startOrder, nil, nil)
	require.Equal(t, "primary", started.source)
	require.NotEmpty(t, started.token)
	id := startedID(t, started)
	for range 20 {
		_, found := n.sees(t, id, started.token)
		require.True(t, found, "a read with the mutation's token sees the write")
	}
	waitFor(t, 90*time.Second, "a query served by the replica", func() bool {
		source, _ := n.sees(t, id, "")
		return source == "replica"
	})
	waitFor(t, 90*time.Second, "the write's token served by the replica", func() bool {
		source, found := n.sees(t, id, started.token)
		require.True(t, found)
		return source == "replica"
	})

	// Replay paused: a new write's token is served by the primary, and past the lag bound the
	// replica is skipped for every read.
	admin := openStore(t, standby.url)
	ctx := context.Background()
	_, err := admin.DB().ExecContext(ctx, "SELECT pg_wal_replay_pause()")
	require.NoError(t, err)
	later := n.post(t, startOrder, nil, nil)
	laterID := startedID(t, later)
	source, found := n.sees(t, laterID, later.token)
	require.True(t, found)
	require.Equal(t, "primary", source)
	waitFor(t, 90*time.Second, "the lagging replica to be skipped", func() bool {
		source, _ := n.sees(t, id, "")
		return source == "primary"
	})
	n.waitLog(t, "read replica skipped: reads go to the primary")
	_, err = admin.DB().ExecContext(ctx, "SELECT pg_wal_replay_resume()")
	require.NoError(t, err)
	waitFor(t, 90*time.Second, "the replica back in use", func() bool {
		source, _ := n.sees(t, laterID, "")
		return source == "replica"
	})

	// The replica down: reads go to the primary. (The primary stops waiting for it first.)
	primaryAdmin := openStore(t, primary.url)
	for _, stmt := range []string{"ALTER SYSTEM RESET synchronous_standby_names", "SELECT pg_reload_conf()"} {
		_, err := primaryAdmin.DB().ExecContext(ctx, stmt)
		require.NoError(t, err)
	}
	_ = admin.Close()
	standby.run(t, "pg_ctl", "-D", standby.data, "-m", "immediate", "-w", "stop")
	// Reads that were routed to it as it stopped fail, until its next check (a second).
	waitFor(t, 90*time.Second, "reads to fall back to the primary", func() bool {
		r := n.post(t, `query($id: ID!) { workflow(id: $id) { id } }`, map[string]any{"id": laterID}, nil)
		return r.source == "primary" && len(r.body.Errors) == 0
	})
	source, found = n.sees(t, laterID, "")
	require.Equal(t, "primary", source)
	require.True(t, found)
	require.Zero(t, n.stop(t), n.output())
}
