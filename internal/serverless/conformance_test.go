package serverless_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// ctkDir holds the specification's conformance features, next to the repository (never copied
// into it).
const ctkDir = "../../../shared/serverless-workflow-ctk/features"

// outOfScope lists the conformance scenarios cairn does not run yet, with the reason: their
// documents must be refused at deploy (INVALID_INPUT). Every other scenario must pass.
var outOfScope = map[string]string{}

// fakeEndpoints serves what the features call on petstore.swagger.io and httpbin.org.
func fakeEndpoints() http.Handler {
	mux := http.NewServeMux()
	pet := func(id string) map[string]any {
		n, _ := strconv.Atoi(id)
		return map[string]any{"id": n, "name": "pet" + id, "status": "available"}
	}
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /v2/swagger.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(petstoreSwagger))
	})
	mux.HandleFunc("GET /v2/pet/findByStatus", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("status") == "" {
			http.Error(w, "status is required", http.StatusBadRequest)
			return
		}
		writeJSON(w, []any{pet("1"), pet("2")})
	})
	mux.HandleFunc("GET /v2/pet/getPetByName/{name}", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "pet not found", http.StatusNotFound)
	})
	mux.HandleFunc("GET /v2/pet/{id}", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, pet(r.PathValue("id"))) })
	mux.HandleFunc("GET /basic-auth/{user}/{password}", func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != r.PathValue("user") || p != r.PathValue("password") {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		writeJSON(w, map[string]any{"authenticated": true, "user": u})
	})
	return mux
}

// petstoreSwagger is the part of the Swagger Petstore's document (Swagger 2.0) the features call.
const petstoreSwagger = `{
  "swagger": "2.0",
  "info": {"title": "Swagger Petstore", "version": "1.0.7"},
  "host": "petstore.swagger.io",
  "basePath": "/v2",
  "schemes": ["https", "http"],
  "paths": {
    "/pet/findByStatus": {
      "get": {
        "operationId": "findPetsByStatus",
        "produces": ["application/json"],
        "parameters": [{"name": "status", "in": "query", "required": true, "type": "array",
          "items": {"type": "string", "enum": ["available", "pending", "sold"]}, "collectionFormat": "multi"}],
        "responses": {"200": {"description": "successful operation"}}
      }
    },
    "/pet/{petId}": {
      "get": {
        "operationId": "getPetById",
        "produces": ["application/json"],
        "parameters": [{"name": "petId", "in": "path", "required": true, "type": "integer", "format": "int64"}],
        "responses": {"200": {"description": "successful operation"}}
      }
    }
  }
}`

// toServer sends every request to a local test server, whatever host it names.
type toServer struct{ host string }

func (s toServer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = "http", s.host
	return http.DefaultTransport.RoundTrip(r)
}

// scenario is one conformance scenario as read from a feature file.
type scenario struct {
	feature, name string
	definition    string
	input         string
	steps         []step // the Then/And assertions
}

type step struct {
	text string
	doc  string // its doc string, if any
}

// readFeatures parses the scenarios of the feature files: the Given/When/Then lines this suite
// needs, with their doc strings.
func readFeatures(t *testing.T, dir string) []scenario {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.feature"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no feature files in %s", dir)
	var out []scenario
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		lines := strings.Split(string(b), "\n")
		var cur *scenario
		for i := 0; i < len(lines); i++ {
			line := strings.TrimSpace(lines[i])
			var doc string
			if i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), `"""`) {
				indent := len(lines[i+1]) - len(strings.TrimLeft(lines[i+1], " "))
				var body []string
				for i += 2; i < len(lines) && strings.TrimSpace(lines[i]) != `"""`; i++ {
					body = append(body, strings.TrimPrefix(lines[i], strings.Repeat(" ", indent)))
				}
				doc = strings.Join(body, "\n")
			}
			switch {
			case strings.HasPrefix(line, "Scenario:"):
				out = append(out, scenario{feature: filepath.Base(f), name: strings.TrimSpace(strings.TrimPrefix(line, "Scenario:"))})
				cur = &out[len(out)-1]
			case cur == nil:
			case strings.HasPrefix(line, "Given a workflow with definition"):
				cur.definition = doc
			case strings.HasPrefix(line, "And given the workflow input is"):
				cur.input = doc
			case strings.HasPrefix(line, "Then "), strings.HasPrefix(line, "And "):
				cur.steps = append(cur.steps, step{text: line, doc: doc})
			}
		}
	}
	return out
}

// TestConformance runs the specification's conformance scenarios through the real engine and
// worker on every backend.
func TestConformance(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(ctkDir); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the conformance features must be at %s under CI: %v", ctkDir, err)
		}
		t.Skipf("conformance features not found at %s (they live beside the repository, not in it)", ctkDir)
	}
	scenarios := readFeatures(t, ctkDir)
	server := httptest.NewServer(fakeEndpoints())
	t.Cleanup(server.Close)
	opts := serverless.Options{HTTP: serverless.HTTPOptions{Transport: toServer{host: server.Listener.Addr().String()}}}
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		n := newNodeWith(t, store, opts)
		n.startWorker(t)
		for _, sc := range scenarios {
			key := sc.feature + "/" + sc.name
			t.Run(key, func(t *testing.T) {
				require.NotEmpty(t, sc.definition, "scenario without a definition")
				if reason, ok := outOfScope[key]; ok {
					// Out of scope: the document is refused at deploy, naming what cairn lacks.
					_, err := n.engine.Deploy(context.Background(), sc.definition, "")
					var we *workflow.Error
					require.ErrorAs(t, err, &we, "an out-of-scope scenario (%s) must be refused at deploy", reason)
					require.Equal(t, workflow.CodeInvalidInput, we.Code)
					t.Logf("out of scope (%s): refused at %s: %s", reason, we.Field, we.Message)
					return
				}
				def := n.deploy(t, sc.definition)
				input := "{}"
				if sc.input != "" {
					js, err := yaml.YAMLToJSON([]byte(sc.input))
					require.NoError(t, err)
					input = string(js)
				}
				w := n.waitEnded(t, n.start(t, def.Type, input).ID)
				for _, st := range sc.steps {
					checkStep(t, store, w, st)
				}
			})
		}
	})
}

var (
	reRuns       = regexp.MustCompile(`^And (\w+) should run (first|last|after (\w+))$`)
	reProps      = regexp.MustCompile(`^And the workflow output should have properties (.+)$`)
	rePropValue  = regexp.MustCompile(`^And the workflow output should have a '([^']+)' property with value:?$`)
	rePropCount  = regexp.MustCompile(`^And the workflow output should have a '([^']+)' property containing (\d+) items$`)
	reQuotedWord = regexp.MustCompile(`'([^']+)'`)
)

// checkStep checks one Then/And assertion of a scenario on the ended workflow.
func checkStep(t *testing.T, store *persistence.Store, w *persistence.Workflow, st step) {
	t.Helper()
	fromYAML := func(s string) any {
		var v any
		require.NoError(t, yaml.Unmarshal([]byte(s), &v))
		return v
	}
	switch {
	case st.text == "Then the workflow should complete", strings.HasPrefix(st.text, "Then the workflow should complete with output"):
		require.Equal(t, persistence.StatusFinished, w.Status, lastError(w))
		if st.doc != "" {
			require.Equal(t, fromYAML(st.doc), output(t, w))
		}
	case st.text == "Then the workflow should fault", strings.HasPrefix(st.text, "Then the workflow should fault with error"):
		require.Equal(t, persistence.StatusFailed, w.Status)
		if st.doc != "" {
			var got map[string]any
			require.NoError(t, json.Unmarshal([]byte(lastError(w)), &got), lastError(w))
			for k, v := range fromYAML(st.doc).(map[string]any) {
				require.Equal(t, v, got[k], "error field %s of %s", k, lastError(w))
			}
		}
	case reRuns.MatchString(st.text):
		m := reRuns.FindStringSubmatch(st.text)
		ran := tasksRun(t, store, w.ID)
		idx := slices.Index(ran, m[1])
		require.GreaterOrEqual(t, idx, 0, "%s did not run: %v", m[1], ran)
		switch {
		case m[2] == "first":
			require.Equal(t, m[1], ran[0], "ran: %v", ran)
		case m[2] == "last":
			require.Equal(t, m[1], ran[len(ran)-1], "ran: %v", ran)
		default:
			require.Greater(t, idx, slices.Index(ran, m[3]), "ran: %v", ran)
		}
	case reProps.MatchString(st.text):
		for _, m := range reQuotedWord.FindAllStringSubmatch(reProps.FindStringSubmatch(st.text)[1], -1) {
			_, ok := property(output(t, w), m[1])
			require.True(t, ok, "output has no property %s: %v", m[1], output(t, w))
		}
	case rePropValue.MatchString(st.text):
		v, ok := property(output(t, w), rePropValue.FindStringSubmatch(st.text)[1])
		require.True(t, ok)
		require.Equal(t, fromYAML(st.doc), v)
	case rePropCount.MatchString(st.text):
		m := rePropCount.FindStringSubmatch(st.text)
		v, ok := property(output(t, w), m[1])
		require.True(t, ok)
		require.Len(t, v, int(fromYAML(m[2]).(float64)))
	default:
		t.Fatalf("unknown step %q", st.text)
	}
}

// property follows a dotted path (error.status) into a value.
func property(v any, path string) (any, bool) {
	for _, part := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[part]; !ok {
			return nil, false
		}
	}
	return v, true
}

// tasksRun lists the names of the tasks a workflow ran, in order, from its history.
func tasksRun(t *testing.T, store *persistence.Store, id int64) []string {
	t.Helper()
	var out []string
	for _, s := range statesRun(t, store, id) {
		if strings.HasPrefix(s, "/") {
			out = append(out, s[strings.LastIndex(s, "/")+1:])
		}
	}
	return out
}
