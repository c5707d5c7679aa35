package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cairnflow/cairn"
	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/ui"
)

// healthChecks answers the probes: /healthz (the process is up) and /readyz (the database answers
// and its schema is exactly the one this cairn knows, and the node is not shutting down).
type healthChecks struct {
	store    *persistence.Store
	stopping atomic.Bool
}

func (h *healthChecks) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ok")
}

func (h *healthChecks) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if reason := h.notReady(r.Context()); reason != "" {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, reason)
		return
	}
	fmt.Fprintln(w, "ready")
}

// notReady returns why the node should not receive traffic, or "" when it should.
func (h *healthChecks) notReady(ctx context.Context) string {
	if h.stopping.Load() {
		return "not ready: shutting down"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := h.store.Ping(ctx); err != nil {
		return "not ready: database unreachable: " + oneLine(err.Error())
	}
	if err := h.store.CheckSchema(ctx); err != nil {
		return "not ready: " + oneLine(err.Error())
	}
	return ""
}

// newHTTPHandler builds the node's HTTP handler: the API's server (graph/server) with the probes,
// /metrics and the dashboard beside it. Streaming requests (websocket and SSE subscriptions) end
// when shutdown begins, so that they do not hold the server open for the whole drain timeout.
func newHTTPHandler(cfg *serveConfig, node *cairn.Node, store *persistence.Store, health *healthChecks, metrics http.Handler, log *slog.Logger, shutdown <-chan struct{}) http.Handler {
	var auth server.Authenticator
	if cfg.auth {
		auth = server.StoreAuthenticator(store)
		// Metrics tell a stranger what the node runs: under --auth they take a token (any role)
		// like the API; Prometheus sends one with authorization.credentials.
		metrics = server.RequireToken(auth, metrics)
	}
	// The dashboard's files hold no data: they load without a token, and the page asks for one
	// when the API refuses it.
	dashboard := ui.Handler("/ui")
	scfg := server.Config{
		Logger:         log,
		Introspection:  cfg.introspection,
		AllowedOrigins: cfg.originList(),
		AllowedHosts:   cfg.limits.isolation.hostList(),
		Addr:           cfg.addr,
		Authenticate:   auth,
		Routes: map[string]http.Handler{
			"GET /healthz": http.HandlerFunc(health.healthz),
			"GET /readyz":  http.HandlerFunc(health.readyz),
			"GET /metrics": metrics,
			"/ui":          dashboard,
			"/ui/":         dashboard,
		},
	}
	if cfg.readRouter != nil {
		scfg.Replicas = cfg.readRouter
	}
	cfg.limits.apply(&scfg)
	return endStreamsOn(shutdown, node.Handler(scfg))
}

// endStreamsOn cancels the context of websocket and SSE requests when shutdown is closed.
func endStreamsOn(shutdown <-chan struct{}, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isStream(r) {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			select {
			case <-shutdown:
				cancel()
			case <-ctx.Done():
			}
		}()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func isStream(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") ||
		strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}
