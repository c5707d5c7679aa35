// Package replicas routes the API's read-only queries to PostgreSQL read replicas: it checks each
// replica at start, watches its lag, and picks one that is up, within the lag bound and (for a
// client that just wrote) past the client's write.
package replicas

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnflow/cairn/persistence"
)

// Config configures a Router.
type Config struct {
	// Primary is the node's store; replicas must be standbys of its cluster.
	Primary *persistence.Store
	// URLs are the replicas' postgres:// URLs.
	URLs []string
	// MaxLag: a replica further behind the primary than this is skipped.
	MaxLag time.Duration
	// Interval is how often each replica's state is read (1s).
	Interval time.Duration
	// MaxConns is each replica's connection pool size.
	MaxConns int
	// Logger receives a warning when a replica is skipped, and when it is back.
	Logger *slog.Logger
}

// replica is one read replica and what was last read of it.
type replica struct {
	name  string // its URL without password
	store *persistence.Store
	// usable: up and within the lag bound at the last check; position: its replay position then.
	usable   atomic.Bool
	position atomic.Uint64
	reason   string // why it was skipped at the last check (only the watcher touches it)
	// seen are the primary's positions at the last checks (only the watcher touches them).
	seen []sample
}

// sample is the primary's WAL position at a time.
type sample struct {
	at  time.Time
	pos persistence.WALPosition
}

// lag is how long ago the primary had written past pos: the oldest sample the replica has not
// replayed yet (0 when it has replayed them all). Samples older than keep are forgotten.
func (rep *replica) lag(now time.Time, primary, pos persistence.WALPosition, keep time.Duration) time.Duration {
	rep.seen = append(rep.seen, sample{at: now, pos: primary})
	for len(rep.seen) > 1 && now.Sub(rep.seen[0].at) > keep {
		rep.seen = rep.seen[1:]
	}
	for _, s := range rep.seen {
		if s.pos > pos {
			return now.Sub(s.at)
		}
	}
	return 0
}

// Router picks where a read-only query reads.
type Router struct {
	cfg      Config
	replicas []*replica
	next     atomic.Uint64
	stop     context.CancelFunc
	done     sync.WaitGroup
}

// Open checks every replica (a PostgreSQL URL, reachable, a standby, of the primary's cluster) and
// returns a Router that watches them until Close. Any failed check fails Open.
func Open(ctx context.Context, cfg Config) (*Router, error) {
	if cfg.Primary == nil || cfg.Logger == nil {
		return nil, errors.New("read replicas need the primary's store and a logger")
	}
	if cfg.Primary.Kind() != persistence.KindPostgres {
		return nil, fmt.Errorf("read replicas need a PostgreSQL database, not %s", cfg.Primary.Kind())
	}
	if cfg.MaxLag <= 0 {
		return nil, fmt.Errorf("the replicas' maximum lag must be positive, not %s", cfg.MaxLag)
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 10
	}
	primary, err := cfg.Primary.ReplicaState(ctx)
	if err != nil {
		return nil, err
	}
	r := &Router{cfg: cfg}
	for _, url := range cfg.URLs {
		rep, err := openReplica(ctx, url, cfg.MaxConns, primary)
		if err != nil {
			r.closeStores()
			return nil, err
		}
		r.replicas = append(r.replicas, rep)
	}
	watchCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.stop = stop
	for _, rep := range r.replicas {
		r.check(watchCtx, rep)
		r.done.Go(func() { r.watch(watchCtx, rep) })
	}
	return r, nil
}

func openReplica(ctx context.Context, url string, maxConns int, primary persistence.ReplicaState) (*replica, error) {
	scheme, _, _ := strings.Cut(url, "://")
	name := persistence.RedactURL(url)
	if s := strings.ToLower(scheme); s != "postgres" && s != "postgresql" {
		return nil, fmt.Errorf("read database %s: a read replica must be a postgres:// URL", name)
	}
	store, err := persistence.Open(ctx, url, persistence.OpenOptions{MaxConns: maxConns})
	if err != nil {
		return nil, fmt.Errorf("read database %s is unreachable: %w", name, err)
	}
	checkCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := store.ReplicaState(checkCtx)
	switch {
	case err != nil:
		err = fmt.Errorf("read database %s is unreachable: %w", name, err)
	case !st.InRecovery:
		err = fmt.Errorf("read database %s is not a replica (pg_is_in_recovery() is false): reads there would miss the primary's writes", name)
	case st.System != "" && primary.System != "" && st.System != primary.System:
		err = fmt.Errorf("read database %s is a replica of another cluster (system %s, the primary's is %s)", name, st.System, primary.System)
	}
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	return &replica{name: name, store: store}, nil
}

// watch reads a replica's state every interval until ctx ends.
func (r *Router) watch(ctx context.Context, rep *replica) {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.check(ctx, rep)
	}
}

// check reads a replica's and the primary's WAL positions. Its lag is how long ago the primary
// wrote what the replica has not replayed yet (by this node's clock, at the checks' resolution).
func (r *Router) check(ctx context.Context, rep *replica) {
	checkCtx, cancel := context.WithTimeout(ctx, max(r.cfg.Interval, time.Second))
	defer cancel()
	reason := ""
	st, err := rep.store.ReplicaState(checkCtx)
	var primary persistence.WALPosition
	if err == nil {
		primary, err = r.cfg.Primary.CurrentWALPosition(checkCtx)
	}
	switch {
	case ctx.Err() != nil:
		return
	case err != nil:
		reason = "unreachable: " + err.Error()
	case !st.InRecovery:
		reason = "no longer a replica (promoted?)"
	default:
		if lag := rep.lag(time.Now(), primary, st.Position, 2*r.cfg.MaxLag); lag > r.cfg.MaxLag {
			reason = fmt.Sprintf("lagging %s behind the primary (more than %s)", lag.Round(time.Millisecond), r.cfg.MaxLag)
		}
	}
	rep.position.Store(uint64(st.Position))
	was := rep.usable.Load()
	rep.usable.Store(reason == "")
	switch {
	case reason != "" && (was || reason != rep.reason):
		r.cfg.Logger.Warn("read replica skipped: reads go to the primary", "replica", rep.name, "reason", reason)
	case reason == "" && !was && rep.reason != "":
		r.cfg.Logger.Info("read replica back in use", "replica", rep.name)
	}
	rep.reason = reason
}

// Pick returns a usable replica that has replayed at least up to after (0: anything), taking the
// usable ones in turn, and its name; ok is false when none is (read the primary then).
func (r *Router) Pick(after persistence.WALPosition) (store *persistence.Store, name string, ok bool) {
	n := len(r.replicas)
	start := int(r.next.Add(1))
	for i := range n {
		rep := r.replicas[(start+i)%n]
		if rep.usable.Load() && persistence.WALPosition(rep.position.Load()) >= after {
			return rep.store, rep.name, true
		}
	}
	return nil, "", false
}

// Position returns the primary's current WAL position: a client that read it after its write
// and hands it back is served by a replica only once the replica has replayed that far.
func (r *Router) Position(ctx context.Context) (persistence.WALPosition, error) {
	return r.cfg.Primary.CurrentWALPosition(ctx)
}

// Close stops watching and closes the replicas' stores.
func (r *Router) Close() {
	r.stop()
	r.done.Wait()
	r.closeStores()
}

func (r *Router) closeStores() {
	for _, rep := range r.replicas {
		_ = rep.store.Close()
	}
}
