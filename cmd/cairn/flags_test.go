package main

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEnvironmentTwins(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"CAIRN_DATABASE_URL":  "postgres://env/db",
		"CAIRN_ADDR":          "0.0.0.0:9000",
		"CAIRN_NO_MIGRATE":    "true",
		"CAIRN_DRAIN_TIMEOUT": "5s",
		"CAIRN_CONCURRENCY":   "7",
		"CAIRN_GROUP":         "a, b,a",
	}
	getenv := func(k string) string { return env[k] }
	cfg, err := parseServeConfig(&environment{stdout: io.Discard, stderr: io.Discard, getenv: getenv},
		[]string{"--addr", "127.0.0.1:1234", "--concurrency=3"})
	require.NoError(t, err)

	require.Equal(t, "127.0.0.1:1234", cfg.addr, "a flag wins over its twin")
	require.Equal(t, 3, cfg.concurrency, "a flag wins over its twin")
	require.Equal(t, "postgres://env/db", cfg.database)
	require.True(t, cfg.noMigrate)
	require.Equal(t, 5*time.Second, cfg.drainTimeout)
	require.Equal(t, []string{"a", "b"}, cfg.groupList())
	require.False(t, cfg.demo, "unset twins keep the default")
	require.Equal(t, "text", cfg.logFormat)
}

func TestEnvNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, "CAIRN_DATABASE_URL", envName("database"))
	require.Equal(t, "CAIRN_NO_WORKERS", envName("no-workers"))
	require.Equal(t, "CAIRN_LOG_LEVEL", envName("log-level"))
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	require.Equal(t, "a; b; c", oneLine("a\nb\r\n\nc\n"))
}
