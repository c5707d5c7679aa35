package dbtest

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/cairnflow/cairn/persistence"
)

var mysqlServer = &server{name: "MariaDB/MySQL", env: "TEST_MYSQL_URL", start: startMariaDBContainer}

// MySQLURL returns the URL of the test MariaDB/MySQL (TEST_MYSQL_URL, mysql://user:pass@host/db),
// or skips (fails under CI=true) without one. Tests create their databases next to the one it
// names, named after it.
func MySQLURL(t testing.TB) string {
	t.Helper()
	return mysqlServer.URL(t)
}

// freshMySQLDatabase creates a database named after the one in base plus a random suffix, and
// returns its URL; it is dropped when the test ends.
func freshMySQLDatabase(t testing.TB, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parsing TEST_MYSQL_URL: %v", err)
	}
	prefix := strings.TrimPrefix(u.Path, "/")
	if prefix == "" {
		prefix = "cairn_test"
	}
	name := prefix + "_" + randomHex(6)
	ctx := context.Background()
	admin, err := persistence.Open(ctx, base, persistence.OpenOptions{MaxConns: 1})
	if err != nil {
		t.Fatalf("connecting to test MariaDB/MySQL: %v", err)
	}
	defer admin.Close()
	if _, err := admin.DB().ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatalf("creating test database: %v", err)
	}
	t.Cleanup(func() {
		admin, err := persistence.Open(context.Background(), base, persistence.OpenOptions{MaxConns: 1})
		if err != nil {
			return
		}
		defer admin.Close()
		_, _ = admin.DB().ExecContext(context.Background(), "DROP DATABASE IF EXISTS `"+name+"`")
	})
	u.Path = "/" + name
	return u.String()
}

func startMariaDBContainer() (string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := dockerAnswers(ctx); err != nil {
		return "", "TEST_MYSQL_URL is unset and no Docker engine answers: " + firstLine(err.Error())
	}
	c, err := testcontainers.Run(ctx, "mariadb:11.4",
		testcontainers.WithExposedPorts("3306/tcp"),
		testcontainers.WithEnv(map[string]string{"MARIADB_ROOT_PASSWORD": "cairn", "MARIADB_DATABASE": "cairn_test"}),
		testcontainers.WithWaitStrategy(wait.ForListeningPort("3306/tcp"), wait.ForLog("ready for connections").WithOccurrence(2)))
	if err != nil {
		return "", "starting a MariaDB container failed: " + firstLine(err.Error())
	}
	host, err := c.Host(ctx)
	if err != nil {
		return "", "reading the MariaDB container's address failed: " + firstLine(err.Error())
	}
	port, err := c.MappedPort(ctx, "3306/tcp")
	if err != nil {
		return "", "reading the MariaDB container's port failed: " + firstLine(err.Error())
	}
	return "mysql://root:cairn@" + host + ":" + port.Port() + "/cairn_test", ""
}
