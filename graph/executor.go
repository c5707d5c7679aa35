package graph

import (
	"log/slog"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/cairnflow/cairn/graph/generated"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
)

// DefaultMaxResponseBytes bounds the values of one response: far above a dashboard page (100
// workflows with 100 KB of variables each is 10 MB), far below what hurts a node.
const DefaultMaxResponseBytes = 32 << 20

// Config configures the resolvers. Only Engine is required. The HTTP server (graph/server) fills
// it from its own Config.
type Config struct {
	// Engine runs the mutations; its Store serves the queries and its notifier wakes subscriptions.
	Engine *engine.Engine
	// Logger receives internal errors and panics (the engine's logger when nil).
	Logger *slog.Logger
	// ExactCountUpTo is how many workflows totalCount and workflowStats count exactly; above it
	// they answer with the database planner's estimate (default persistence.DefaultExactCountUpTo;
	// negative: always count exactly).
	ExactCountUpTo int
	// RequestTimeout is the server's request timeout, named in the error of a field it cut.
	RequestTimeout time.Duration
	// MaxResponseBytes bounds the values of one response (a query, a mutation, one subscription
	// event), counted as its fields resolve (default DefaultMaxResponseBytes).
	MaxResponseBytes int64
	// PollInterval is how often the node's change-event reader reads the change events when no
	// hint arrives (default 1s).
	PollInterval time.Duration
	// SubscriptionBuffer is how many events a subscriber may lag behind (default 256).
	SubscriptionBuffer int
	// MaxSubscriptionsPerConnection bounds the subscriptions one websocket runs at once
	// (default 100).
	MaxSubscriptionsPerConnection int
	// MaxSubscriptions bounds the subscriptions the node serves at once (default 5000).
	MaxSubscriptions int
	// Replicas, when set, serve the read-only queries of requests that carry a ReadRoute
	// (WithReadRoute); mutations and subscriptions read the primary.
	Replicas ReadReplicas
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = c.Engine.Logger()
	}
	if c.ExactCountUpTo == 0 {
		c.ExactCountUpTo = persistence.DefaultExactCountUpTo
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.MaxSubscriptionsPerConnection <= 0 {
		c.MaxSubscriptionsPerConnection = 100
	}
	if c.MaxSubscriptions <= 0 {
		c.MaxSubscriptions = 5000
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.SubscriptionBuffer <= 0 {
		c.SubscriptionBuffer = 256
	}
	return c
}

// NewExecutor returns gqlgen's server of cairn's schema over its resolvers, without transports:
// the HTTP server (graph/server) adds them, with its limits and auth. It prices fields for the
// cost limit, presents errors (coded, internal ones masked), gives every response fresh
// dataloaders and a byte budget.
func NewExecutor(cfg Config) *handler.Server {
	cfg = cfg.withDefaults()
	r := &Resolver{engine: cfg.Engine, store: cfg.Engine.Store(), log: cfg.Logger, cfg: cfg,
		subs: &subscriptionSlots{perConnection: int64(cfg.MaxSubscriptionsPerConnection), perNode: int64(cfg.MaxSubscriptions)},
		hub:  newLiveHub(cfg.Engine.Store(), cfg.Engine.Notifier(), cfg.Logger, cfg.PollInterval, cfg.SubscriptionBuffer)}
	gql := generated.Config{Resolvers: r}
	setComplexity(&gql.Complexity)
	srv := handler.New(generated.NewExecutableSchema(gql))
	srv.SetQueryCache(lru.New[*ast.QueryDocument](1000))
	srv.SetErrorPresenter(errorPresenter(cfg.Logger, cfg.RequestTimeout))
	srv.SetRecoverFunc(recoverFunc(cfg.Logger))
	// First, so that a subscription's response made once per shape skips the rest (see
	// shareSubscriptions).
	shareSubscriptions(srv)
	// Fresh dataloaders for every response: a query, a mutation, or one event of a subscription
	// (so a long subscription never serves stale rows from a cache).
	srv.AroundResponses(r.routeResponse)
	boundResponses(srv, cfg.MaxResponseBytes)
	return srv
}
