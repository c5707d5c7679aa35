package main

import (
	"time"

	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/persistence"
)

// apiLimits are the limits of the HTTP server and the GraphQL API that cairn serve takes as
// flags (README, "Limits").
type apiLimits struct {
	maxBodyBytes                  int64
	maxDepth                      int
	maxComplexity                 int
	maxTokens                     int
	maxFields                     int
	maxAliases                    int
	maxSubscriptionsPerConnection int
	maxSubscriptions              int
	tokenRecheck                  time.Duration
	websocketInitTimeout          time.Duration
	pingInterval                  time.Duration
	readHeaderTimeout             time.Duration
	readTimeout                   time.Duration
	idleTimeout                   time.Duration
	exactCountUpTo                int
	isolation                     isolationLimits
}

func (l *apiLimits) register(fs *flagSet) {
	fs.Int64Var(&l.maxBodyBytes, "max-body-bytes", 1<<20, "largest GraphQL request body in bytes; larger ones get 413")
	fs.IntVar(&l.maxDepth, "max-depth", 15, "deepest nesting of fields a GraphQL operation may have")
	fs.IntVar(&l.maxComplexity, "max-complexity", 50000, "highest cost of a GraphQL operation (a field costs 1, a connection's items times its page size, workflowStats and totalCount more)")
	fs.IntVar(&l.maxTokens, "max-tokens", 15000, "most tokens a GraphQL document may have")
	fs.IntVar(&l.maxFields, "max-fields", 500, "most fields a GraphQL document may select, as written and with its fragments expanded")
	fs.IntVar(&l.maxAliases, "max-aliases", 100, "most aliased fields a GraphQL document may have")
	fs.IntVar(&l.maxSubscriptionsPerConnection, "max-subscriptions-per-connection", 100, "most subscriptions one websocket may run at once")
	fs.IntVar(&l.maxSubscriptions, "max-subscriptions", 5000, "most subscriptions (websocket and SSE) the node serves at once")
	fs.DurationVar(&l.tokenRecheck, "token-recheck-interval", 5*time.Second, "with --auth, how often open websockets and SSE streams check that their token was not revoked")
	fs.DurationVar(&l.websocketInitTimeout, "websocket-init-timeout", 10*time.Second, "how long a websocket client has to send connection_init before it is closed")
	fs.DurationVar(&l.pingInterval, "ping-interval", 20*time.Second, "how often websockets (ping/pong) and SSE streams (a comment line) are pinged; a websocket that does not answer within twice this is closed")
	fs.DurationVar(&l.readHeaderTimeout, "read-header-timeout", 10*time.Second, "longest time a client may take to send a request's header")
	fs.DurationVar(&l.readTimeout, "read-timeout", 30*time.Second, "longest time a client may take to send a whole request (header and body); streams are not cut by it")
	fs.DurationVar(&l.idleTimeout, "idle-timeout", 60*time.Second, "how long an idle keep-alive connection stays open")
	l.isolation.register(fs)
	fs.IntVar(&l.exactCountUpTo, "exact-count-up-to", persistence.DefaultExactCountUpTo, "how many workflows totalCount and workflowStats count exactly; above, the database's estimate, flagged as one (0: always count exactly, however long it takes)")
}

// check refuses limits that are not positive.
func (l *apiLimits) check() error {
	if err := l.isolation.check(); err != nil {
		return err
	}
	if l.exactCountUpTo < 0 {
		return usagef("--exact-count-up-to must be 0 or more, not %d", l.exactCountUpTo)
	}
	for name, v := range map[string]int64{
		"max-body-bytes": l.maxBodyBytes, "max-depth": int64(l.maxDepth), "max-complexity": int64(l.maxComplexity),
		"max-tokens": int64(l.maxTokens), "max-fields": int64(l.maxFields), "max-aliases": int64(l.maxAliases),
		"max-subscriptions-per-connection": int64(l.maxSubscriptionsPerConnection), "max-subscriptions": int64(l.maxSubscriptions),
		"token-recheck-interval": int64(l.tokenRecheck), "websocket-init-timeout": int64(l.websocketInitTimeout), "ping-interval": int64(l.pingInterval), "read-header-timeout": int64(l.readHeaderTimeout),
		"read-timeout": int64(l.readTimeout), "idle-timeout": int64(l.idleTimeout),
	} {
		if v <= 0 {
			return usagef("--%s must be positive", name)
		}
	}
	return nil
}

// apply copies the limits into the HTTP server's configuration.
func (l *apiLimits) apply(c *server.Config) {
	c.MaxBodyBytes = l.maxBodyBytes
	c.MaxDepth = l.maxDepth
	c.ComplexityLimit = l.maxComplexity
	c.ParserTokenLimit = l.maxTokens
	c.MaxFields = l.maxFields
	c.MaxAliases = l.maxAliases
	c.MaxSubscriptionsPerConnection = l.maxSubscriptionsPerConnection
	c.MaxSubscriptions = l.maxSubscriptions
	c.TokenRecheckInterval = l.tokenRecheck
	c.InitTimeout = l.websocketInitTimeout
	c.PingInterval = l.pingInterval
	c.ExactCountUpTo = l.exactCountUpTo
	l.isolation.apply(c)
	if l.exactCountUpTo == 0 {
		c.ExactCountUpTo = -1
	}
}
