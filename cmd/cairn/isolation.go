package main

import (
	"strings"
	"time"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/graph/server"
)

// isolationLimits are the flags that keep one client from holding or flooding the node: how long a
// request may run, and which Host names the node answers (README, "Limits").
type isolationLimits struct {
	requestTimeout   time.Duration
	allowedHosts     string
	maxResponseBytes int64
}

func (l *isolationLimits) register(fs *flagSet) {
	fs.DurationVar(&l.requestTimeout, "request-timeout", server.DefaultRequestTimeout, "longest time a query or mutation request may run; a pollTasks long poll answers (with no task) before it. Websocket and SSE subscriptions are not cut by it")
	fs.Int64Var(&l.maxResponseBytes, "max-response-bytes", graph.DefaultMaxResponseBytes, "largest response (its values, counted as they load: one query, mutation or subscription event); beyond it the response is one RESPONSE_TOO_LARGE error. At the default a node answering a 2.5 GB query peaked at 240 MB")
	fs.StringVar(&l.allowedHosts, "allowed-hosts", "", "host `names` (cairn.example.com, *.example.com) the node answers besides localhost, IP addresses and the --addr host, comma-separated; other Host headers get 421 (DNS rebinding). * answers every name")
}

// check refuses limits that are not positive.
func (l *isolationLimits) check() error {
	if l.requestTimeout <= 0 {
		return usagef("--request-timeout must be positive")
	}
	if l.maxResponseBytes <= 0 {
		return usagef("--max-response-bytes must be positive")
	}
	return nil
}

// apply copies the limits into the HTTP server's configuration.
func (l *isolationLimits) apply(c *server.Config) {
	c.RequestTimeout = l.requestTimeout
	c.MaxResponseBytes = l.maxResponseBytes
}

// hostList returns the patterns of --allowed-hosts.
func (l *isolationLimits) hostList() []string {
	var out []string
	for _, h := range strings.Split(l.allowedHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, strings.ToLower(h))
		}
	}
	return out
}
