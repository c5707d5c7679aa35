package persistence

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"
)

// mysqlConfig turns mysql://user:pass@host:3306/db?param=value into the driver's configuration:
// times parsed into time.Time in UTC, utf8mb4, and the session in UTC. Query parameters are passed
// to the driver as they are (tls=true, for one).
func mysqlConfig(rawURL string) (*mysql.Config, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("error parsing %s: %w", redact(rawURL), err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return nil, fmt.Errorf("%w %q: want mysql://user:pass@host:3306/database", ErrUnsupportedURL, redact(rawURL))
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "3306")
	}
	dsn := "tcp(" + host + ")/" + db
	if u.User != nil {
		user := u.User.Username()
		if pass, ok := u.User.Password(); ok {
			user += ":" + pass
		}
		dsn = user + "@" + dsn
	}
	if u.RawQuery != "" {
		dsn += "?" + u.RawQuery
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("error parsing %s: %w", redact(rawURL), err)
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.Collation = "utf8mb4_bin"
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	return cfg, nil
}

// openMySQL opens a pool on MariaDB or MySQL. Sessions run at READ COMMITTED, as PostgreSQL's do:
// a statement sees what committed before it, and InnoDB takes no gap locks. On MySQL (not MariaDB,
// whose INSERT ... RETURNING hands back the IDs) a multi-row INSERT must get consecutive IDs, as
// Bun numbers the rows from the first one: Open refuses a server that would interleave them.
func openMySQL(ctx context.Context, rawURL string, opts OpenOptions) (*bun.DB, error) {
	cfg, err := mysqlConfig(rawURL)
	if err != nil {
		return nil, err
	}
	probeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var version string
	var lockMode, increment int
	probe, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("error configuring %s: %w", redact(rawURL), err)
	}
	probeDB := sql.OpenDB(probe)
	err = probeDB.QueryRowContext(probeCtx, "SELECT VERSION(), @@innodb_autoinc_lock_mode, @@auto_increment_increment").Scan(&version, &lockMode, &increment)
	_ = probeDB.Close()
	if err != nil {
		return nil, fmt.Errorf("error connecting to %s: %w", redact(rawURL), err)
	}
	isolation := "transaction_isolation"
	if strings.Contains(strings.ToLower(version), "mariadb") {
		isolation = "tx_isolation"
	} else if lockMode == 2 || increment != 1 {
		return nil, fmt.Errorf("error opening %s: MySQL must hand out consecutive IDs to a multi-row INSERT: "+
			"start it with innodb_autoinc_lock_mode=1 and auto_increment_increment=1 (it has %d and %d)", redact(rawURL), lockMode, increment)
	}
	cfg.Params[isolation] = "'READ-COMMITTED'"
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("error configuring %s: %w", redact(rawURL), err)
	}
	sqldb := sql.OpenDB(conn)
	max := opts.MaxConns
	if max <= 0 {
		max = 20
	}
	sqldb.SetMaxOpenConns(max)
	sqldb.SetMaxIdleConns(max)
	// Below the server's wait_timeout (8 hours by default), so the pool never hands out a
	// connection the server has closed.
	sqldb.SetConnMaxIdleTime(5 * time.Minute)
	sqldb.SetConnMaxLifetime(time.Hour)
	return bun.NewDB(sqldb, mysqldialect.New(mysqldialect.WithTimeLocation("UTC")), bun.WithDiscardUnknownColumns()), nil
}
