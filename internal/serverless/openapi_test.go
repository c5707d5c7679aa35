package serverless_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// inventoryAPI is an OpenAPI 3 document whose server is relative to the document's own URL.
const inventoryAPI = `
openapi: 3.0.3
info: {title: Inventory, version: '1.0'}
servers:
  - url: '{base}/api'
    variables:
      base: {default: ''}
paths:
  /items/{sku}:
    parameters:
      - {name: sku, in: path, required: true, schema: {type: string}}
    get:
      operationId: getItem
      parameters:
        - {name: detail, in: query, schema: {type: boolean}}
        - {name: X-Tenant, in: header, required: true, schema: {type: string}}
      responses: {'200': {description: the item}}
    put:
      operationId: putItem
      requestBody:
        content:
          application/json:
            schema: {type: object}
      responses: {'200': {description: stored}}
`

// TestOpenAPICall resolves operations from an OpenAPI 3 document served by a local server: path,
// query and header parameters, a request body, bearer authentication, and the faults of a missing
// required parameter, an unknown operation and a document the node may not fetch.
func TestOpenAPICall(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /specs/inventory.yaml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = io.WriteString(w, inventoryAPI)
	})
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /api/items/{sku}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"sku": r.PathValue("sku"), "detail": r.URL.Query().Get("detail"),
			"tenant": r.Header.Get("X-Tenant"), "auth": r.Header.Get("Authorization")})
	})
	mux.HandleFunc("PUT /api/items/{sku}", func(w http.ResponseWriter, r *http.Request) {
		var body any
		_ = json.NewDecoder(r.Body).Decode(&body)
		writeJSON(w, map[string]any{"sku": r.PathValue("sku"), "stored": body})
	})
	server := httptest.NewServer(mux)
	t.Cleanup(server.Close)
	docURL := server.URL + "/specs/inventory.yaml"
	call := func(name, op, params string) string {
		return fmt.Sprintf(`
document: {dsl: '1.0.0', namespace: openapi, name: %s, version: '1.0.0'}
do:
  - call:
      call: openapi
      with:
        document: {endpoint: '%s'}
        operationId: %s
        parameters: %s
        authentication: {bearer: {token: '${ $secret.token }'}}
`, name, docURL, op, params)
	}
	allowed := serverless.Options{HTTP: serverless.HTTPOptions{Allow: []string{"127.0.0.1"}}, Secrets: map[string]any{"token": "s3cret"}}

	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNodeWith(t, store, allowed)
		n.startWorker(t)
		run := func(t *testing.T, doc, input string) *persistence.Workflow {
			def := n.deploy(t, doc)
			return n.waitEnded(t, n.start(t, def.Type, input).ID)
		}

		t.Run("path, query and header parameters with bearer authentication", func(t *testing.T) {
			w := run(t, call("get", "getItem", `{sku: '${ .sku }', detail: true, X-Tenant: acme}`), `{"sku":"a/1"}`)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Equal(t, map[string]any{"sku": "a/1", "detail": "true", "tenant": "acme", "auth": "Bearer [secret]"}, output(t, w), "the endpoint got the token; its echo of it is not stored")
		})
		t.Run("a request body from the parameters the operation does not declare", func(t *testing.T) {
			w := run(t, call("put", "putItem", `{sku: b2, count: '${ .count }'}`), `{"count":7}`)
			require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
			require.Equal(t, map[string]any{"sku": "b2", "stored": map[string]any{"count": float64(7)}}, output(t, w))
		})
		t.Run("a missing required parameter faults", func(t *testing.T) {
			w := run(t, call("missing", "getItem", `{sku: c3}`), `{}`)
			require.Equal(t, persistence.StatusFailed, w.Status)
			p := problemFields(t, w)
			require.Equal(t, float64(400), p["status"])
			require.Contains(t, p["detail"], `"X-Tenant"`)
		})
		t.Run("an unknown operation faults", func(t *testing.T) {
			w := run(t, call("unknown", "deleteItem", `{}`), `{}`)
			require.Equal(t, persistence.StatusFailed, w.Status)
			require.Contains(t, problemFields(t, w)["detail"], `no operation "deleteItem"`)
		})
	})

	t.Run("the document is fetched within the node's HTTP options", func(t *testing.T) {
		t.Parallel()
		n := newNode(t, dbtest.Open(t, persistence.KindSQLite))
		n.startWorker(t)
		def := n.deploy(t, call("private", "getItem", `{sku: d4, X-Tenant: acme}`))
		w := n.waitEnded(t, n.start(t, def.Type, `{}`).ID)
		require.Equal(t, persistence.StatusFailed, w.Status)
		require.Equal(t, float64(403), problemFields(t, w)["status"], "a loopback document is refused by default")
	})
}

func problemFields(t *testing.T, w *persistence.Workflow) map[string]any {
	t.Helper()
	var p map[string]any
	require.NoError(t, json.Unmarshal([]byte(lastError(w)), &p), lastError(w))
	return p
}
