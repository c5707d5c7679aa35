package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/cairnflow/cairn/persistence"
)

// partitionFlag registers --history-partition.
func partitionFlag(fs *flagSet, p *string) {
	fs.StringVar(p, "history-partition", "", "`width` (day or week) of the partitions of the history tables on PostgreSQL: "+
		"partitions are made ahead by the node, and --retention drops whole partitions instead of deleting rows. "+
		"A new database is partitioned at start; one holding history needs cairn migrate partition-history first. "+
		"Empty: as the database is (unpartitioned, or the width it was partitioned by)")
}

// checkPartitionFlag checks --history-partition against the database and --retention, before
// anything is opened.
func checkPartitionFlag(width, database string, retention time.Duration) error {
	if width == "" {
		return nil
	}
	w, err := persistence.ParsePartitionWidth(width)
	if err != nil {
		return usagef("--history-partition: %v", err)
	}
	if err := w.CheckRetention(retention); err != nil {
		return usagef("--retention: %v", err)
	}
	if !isPostgresURL(database) {
		return usagef("--history-partition: %v; leave the flag out and use --retention", persistence.ErrPartitionsUnsupported)
	}
	return nil
}

// isPostgresURL says whether a database URL names PostgreSQL.
func isPostgresURL(url string) bool {
	scheme, _, _ := strings.Cut(url, "://")
	scheme = strings.ToLower(scheme)
	return scheme == "postgres" || scheme == "postgresql"
}

// preparePartitions returns the width the node keeps partitions of: the flag's, partitioning a
// database whose history is still empty; or, without the flag, the width the database has.
func preparePartitions(ctx context.Context, store *persistence.Store, flag string, retention time.Duration, log *slog.Logger) (persistence.PartitionWidth, error) {
	if flag != "" && store.Kind() != persistence.KindPostgres {
		return "", fmt.Errorf("--history-partition: %w; leave the flag out and use --retention", persistence.ErrPartitionsUnsupported)
	}
	current, err := store.HistoryPartitioning(ctx)
	if err != nil {
		return "", err
	}
	if flag == "" {
		if current != "" {
			if err := current.CheckRetention(retention); err != nil {
				return "", fmt.Errorf("--retention: %w", err)
			}
			log.Info("the history tables are partitioned", "width", current)
		}
		return current, nil
	}
	want := persistence.PartitionWidth(flag)
	switch {
	case current == want:
		return want, nil
	case current != "":
		return "", fmt.Errorf("--history-partition %s: the history is partitioned by %s already", want, current)
	}
	var some bool
	if err := store.DB().QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM actions) OR EXISTS (SELECT 1 FROM change_events)").Scan(&some); err != nil {
		return "", err
	}
	if some {
		return "", fmt.Errorf("--history-partition %s: the history tables hold rows already; partition them with "+
			"cairn migrate partition-history --width %s (it locks them while it copies them: see the operations guide)", want, want)
	}
	if _, err := store.PartitionHistory(ctx, persistence.PartitionHistoryParams{Width: want, Ahead: 1, Now: persistence.Now()}); err != nil {
		return "", err
	}
	log.Info("partitioned the history tables", "width", want)
	return want, nil
}

// migratePartitions runs cairn migrate partition-history.
func migratePartitions(ctx context.Context, store *persistence.Store, width string, out io.Writer) error {
	w, err := persistence.ParsePartitionWidth(width)
	if err != nil {
		return usagef("--width: %v", err)
	}
	if store.Kind() != persistence.KindPostgres {
		return fmt.Errorf("partition-history: %w", persistence.ErrPartitionsUnsupported)
	}
	if _, err := store.Migrate(ctx); err != nil {
		return err
	}
	before, err := store.HistoryPartitioning(ctx)
	if err != nil {
		return err
	}
	if before == w {
		fmt.Fprintf(out, "%s: the history is partitioned by %s already\n", store.URL(), w)
		return nil
	}
	began := time.Now()
	copied, err := store.PartitionHistory(ctx, persistence.PartitionHistoryParams{Width: w, Ahead: 1, Now: persistence.Now()})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "partitioned the history of %s by %s: %d rows copied in %s\n", store.URL(), w, copied, time.Since(began).Round(time.Millisecond))
	return nil
}
