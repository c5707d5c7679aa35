// Package graph is cairn's GraphQL API: the resolvers (thin: mutations call the workflow engine's
// operations, queries read the Store through per-request dataloaders), subscriptions fed by the
// change events, and NewExecutor, the schema's executor that the HTTP server (package
// graph/server: transports, auth, limits, CORS) serves.
package graph

import (
	"log/slog"

	"github.com/cairnflow/cairn/internal/engine"
)

// Resolver holds the dependencies of every resolver.
type Resolver struct {
	engine *engine.Engine
	store  Reads
	log    *slog.Logger
	cfg    Config
	subs   *subscriptionSlots
	hub    *liveHub
}
