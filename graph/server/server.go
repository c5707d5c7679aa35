// Package server is cairn's HTTP server: the transports of its GraphQL API (POST, GET, websockets,
// Server-Sent Events), its authentication, its request limits, CORS and the Host check, around the
// resolvers of package graph. New returns the handler that cairn serve and embedders mount.
package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/graph/graphiql"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
)

// Config configures cairn's HTTP server. Only Engine is required, and cairn.Node.Handler sets it
// to the node's; every limit has a default.
type Config struct {
	// Engine runs the mutations; its Store serves the queries and its notifier wakes subscriptions
	// (the node's wake-up relay brings in the events committed on other nodes on PostgreSQL).
	Engine *engine.Engine
	// Logger receives internal errors and panics (the engine's logger when nil).
	Logger *slog.Logger
	// Introspection lets clients (GraphiQL) read the schema. cairn serve turns it on by default.
	Introspection bool
	// AllowedOrigins are the browser origins, besides the server's own, allowed to open a websocket
	// and to call the API from their pages (CORS): host patterns ("app.example.com",
	// "*.example.com") or scheme://host patterns.
	AllowedOrigins []string
	// AllowedHosts are the host names, besides IP addresses, localhost and the host of Addr, that
	// requests may name in their Host header; others get 421 (a DNS rebinding sends a name of its
	// own). Patterns such as "*.example.com"; "*" accepts any host.
	AllowedHosts []string
	// Addr is the address the server listens on ("host:port"); its host is accepted as a Host.
	Addr string
	// Routes are more handlers the server serves beside the API, by http.ServeMux pattern (cmd/cairn
	// mounts the dashboard and /metrics here), behind the same Host check but without CORS.
	Routes map[string]http.Handler
	// Authenticate, when set, requires an API token on every request (Authorization: Bearer, or in
	// a websocket's connection_init payload), resolved once per request into its caller (a
	// graph.Principal): none or a bad one is UNAUTHENTICATED, and a caller whose role is not
	// admin may not run mutations (FORBIDDEN). Nil serves everyone.
	Authenticate Authenticator

	// Replicas, when set, serve read-only queries (lists, counts, stats, history) from read
	// replicas; mutations and subscriptions stay on the primary. Responses then carry
	// Cairn-Read-Source (primary or replica) and, after a mutation, Cairn-Consistency-Token: a
	// request sending that token back reads a replica only once it has replayed the mutation.
	Replicas graph.ReadReplicas

	// ExactCountUpTo is how many workflows totalCount and workflowStats count exactly; above it
	// they answer with the database planner's estimate, flagged as one, so that counts cost the
	// same on a million workflows as on ten thousand (default persistence.DefaultExactCountUpTo;
	// negative: always count exactly).
	ExactCountUpTo int

	// MaxDepth bounds how deeply a query nests fields (default 15; introspection fields not counted).
	MaxDepth int
	// ComplexityLimit bounds a query's cost: each field costs 1, a connection's items cost their
	// cost times the page size, and the fields that scan many rows cost graph.CostWorkflowStats,
	// graph.CostWorkflowTotalCount and graph.CostHistoryTotalCount (default 50000).
	ComplexityLimit int
	// RequestTimeout bounds a query or mutation request, a long poll included (it answers with no
	// task before then); websocket and SSE streams are not bounded (default DefaultRequestTimeout).
	RequestTimeout time.Duration
	// MaxResponseBytes bounds the values of one response (a query, a mutation, one subscription
	// event), counted as its fields resolve; the fields past it end with RESPONSE_TOO_LARGE
	// (default graph.DefaultMaxResponseBytes).
	MaxResponseBytes int64
	// MaxBodyBytes bounds a request body (default 1 MiB); larger requests get 413.
	MaxBodyBytes int64
	// ParserTokenLimit bounds the tokens of a query document (default 15000).
	ParserTokenLimit int
	// MaxFields bounds the fields of a query document, as written and, per operation, with its
	// fragments expanded (default 500). Checked before validation, whose cost it bounds.
	MaxFields int
	// MaxAliases bounds the aliased fields of a query document (default 100).
	MaxAliases int

	// PollInterval is how often the node's change-event reader reads the change events when no
	// hint arrives (default 1s).
	PollInterval time.Duration
	// SubscriptionBuffer is how many events a subscriber may lag behind before it is told it fell
	// behind (default 256).
	SubscriptionBuffer int
	// PingInterval is how often the server pings websocket clients (graphql-transport-ws ping/pong);
	// a client that does not answer within twice this is disconnected (default 20s).
	PingInterval time.Duration
	// InitTimeout is how long a websocket client has to send connection_init (default 10s).
	InitTimeout time.Duration
	// MaxSubscriptionsPerConnection bounds the subscriptions one websocket runs at once
	// (default 100).
	MaxSubscriptionsPerConnection int
	// MaxSubscriptions bounds the subscriptions the node serves at once, over websockets and SSE
	// (default 5000).
	MaxSubscriptions int
	// TokenRecheckInterval is how often an open websocket or SSE stream checks that its API token
	// is still valid; a revoked one is closed (default 5s). Each websocket operation checks it too.
	TokenRecheckInterval time.Duration
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = c.Engine.Logger()
	}
	if c.ExactCountUpTo == 0 {
		c.ExactCountUpTo = persistence.DefaultExactCountUpTo
	}
	if c.MaxDepth <= 0 {
		c.MaxDepth = 15
	}
	if c.ComplexityLimit <= 0 {
		c.ComplexityLimit = 50000
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = graph.DefaultMaxResponseBytes
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 1 << 20
	}
	if c.ParserTokenLimit <= 0 {
		c.ParserTokenLimit = 15000
	}
	if c.MaxFields <= 0 {
		c.MaxFields = 500
	}
	if c.MaxAliases <= 0 {
		c.MaxAliases = 100
	}
	if c.MaxSubscriptionsPerConnection <= 0 {
		c.MaxSubscriptionsPerConnection = 100
	}
	if c.MaxSubscriptions <= 0 {
		c.MaxSubscriptions = 5000
	}
	if c.TokenRecheckInterval <= 0 {
		c.TokenRecheckInterval = 5 * time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.SubscriptionBuffer <= 0 {
		c.SubscriptionBuffer = 256
	}
	if c.PingInterval <= 0 {
		c.PingInterval = 20 * time.Second
	}
	if c.InitTimeout <= 0 {
		c.InitTimeout = 10 * time.Second
	}
	return c
}

// New returns the HTTP handler of cairn's GraphQL API: GraphiQL at "/" and the endpoint at
// "/graphql", which takes queries and mutations by POST (JSON) and GET, and subscriptions over
// websocket (graphql-transport-ws, and the legacy graphql-ws) and over Server-Sent Events (GET,
// as a browser's EventSource sends it, or POST, with Accept: text/event-stream; see
// sseTransport), plus cfg.Routes. Requests naming a foreign Host get 421 (see guardHosts); pages
// of cfg.AllowedOrigins may call the API (CORS). Mount it at the root of a server (or strip a
// prefix first).
func New(cfg Config) http.Handler {
	cfg = cfg.withDefaults()
	srv := graph.NewExecutor(graph.Config{Engine: cfg.Engine, Logger: cfg.Logger, ExactCountUpTo: cfg.ExactCountUpTo,
		RequestTimeout: cfg.RequestTimeout, MaxResponseBytes: cfg.MaxResponseBytes, PollInterval: cfg.PollInterval,
		SubscriptionBuffer: cfg.SubscriptionBuffer, MaxSubscriptionsPerConnection: cfg.MaxSubscriptionsPerConnection,
		MaxSubscriptions: cfg.MaxSubscriptions, Replicas: cfg.Replicas})

	var initFunc transport.WebsocketInitFunc
	if cfg.Authenticate != nil {
		initFunc = wsInit(cfg.Authenticate, cfg.TokenRecheckInterval)
	}
	srv.AddTransport(websocketTransport{transport.Websocket{
		InitFunc:       initFunc,
		Implementation: coderImplementation{options: websocket.AcceptOptions{OriginPatterns: cfg.AllowedOrigins}},
		InitTimeout:    cfg.InitTimeout,
		// PingPongInterval drives graphql-transport-ws; KeepAlivePingInterval the legacy graphql-ws.
		PingPongInterval:      cfg.PingInterval,
		KeepAlivePingInterval: cfg.PingInterval,
		ErrorFunc: func(ctx context.Context, err error) {
			cfg.Logger.DebugContext(ctx, "websocket closed with an error", "error", err)
		},
	}})
	srv.AddTransport(sseTransport{pingInterval: cfg.PingInterval})
	srv.AddTransport(transport.Options{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})

	srv.SetParserTokenLimit(cfg.ParserTokenLimit)
	if cfg.Introspection {
		srv.Use(extension.Introspection{})
	}
	srv.Use(introspectionGuard{})
	srv.Use(newDocumentLimits(cfg))
	srv.Use(noPlainSubscriptions{})
	srv.Use(onePollPerRequest{})
	if cfg.Authenticate != nil {
		srv.Use(tokenStillValid{auth: cfg.Authenticate})
		srv.Use(rolesRule{})
	}
	srv.Use(&costLimit{max: cfg.ComplexityLimit})
	srv.Use(responseSenders{})
	srv.Use(operationSpans{})

	api := http.NewServeMux()
	var endpoint http.Handler = traceRequests(limitBody(guardRequests(conformStatus(srv), cfg, cfg.Logger), cfg.MaxBodyBytes))
	if cfg.Replicas != nil {
		endpoint = routeReads(endpoint)
	}
	if cfg.Authenticate != nil {
		endpoint = requireToken(cfg.Authenticate, cfg.TokenRecheckInterval, endpoint)
	}
	api.Handle("/graphql", endpoint)
	ui := graphiql.Handler()
	api.Handle("/{$}", ui)
	api.Handle("/graphiql/", ui)
	if len(cfg.Routes) == 0 {
		return guardHosts(cfg.Addr, cfg.AllowedHosts, allowCORS(cfg.AllowedOrigins, api))
	}
	mux := http.NewServeMux()
	for pattern, h := range cfg.Routes {
		mux.Handle(pattern, h)
	}
	mux.Handle("/", allowCORS(cfg.AllowedOrigins, api))
	return guardHosts(cfg.Addr, cfg.AllowedHosts, mux)
}

// limitBody refuses request bodies over max bytes with 413 and a GraphQL error.
func limitBody(next http.Handler, max int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			writeError(w, http.StatusRequestEntityTooLarge, codeRequestTooLarge, fmt.Sprintf("the request body is over %d bytes", max))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, max)
		next.ServeHTTP(w, r)
	})
}
