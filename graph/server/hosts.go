package server

import (
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"path"
	"strings"
)

// guardHosts answers 421 to a request whose Host header names a host the node is not known by,
// before any handler runs. A page of evil.example whose name is made to resolve to 127.0.0.1 (DNS
// rebinding) sends Host: evil.example and an Origin that matches it, so CORS and the websocket
// origin check let it through; its Host gives it away. Accepted: IP addresses (a rebinding needs a
// name), localhost, the host of --addr, and the patterns of --allowed-hosts ("*": any). The
// probes answer any host: they tell nothing and load balancers call them by any name.
func guardHosts(listenAddr string, patterns []string, next http.Handler) http.Handler {
	for _, p := range patterns {
		if p == "*" {
			return next
		}
	}
	listenHost, _, err := net.SplitHostPort(listenAddr)
	if err != nil {
		listenHost = listenAddr
	}
	listenHost = normalHost(listenHost)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || hostAllowed(r.Host, listenHost, patterns) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMisdirectedRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{
			"message":    "this node does not answer to that host name; its operator may add it with --allowed-hosts",
			"extensions": map[string]any{"code": "MISDIRECTED_REQUEST"}}}})
	})
}

// hostAllowed reports whether a Host header names the node.
func hostAllowed(hostHeader, listenHost string, patterns []string) bool {
	host := hostHeader
	if h, _, err := net.SplitHostPort(hostHeader); err == nil {
		host = h
	}
	host = normalHost(host)
	if host == "" {
		return true // HTTP/1.0 without Host: no browser sends that
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	if host == "localhost" || (listenHost != "" && host == listenHost) {
		return true
	}
	for _, p := range patterns {
		if ok, err := path.Match(p, host); err == nil && ok {
			return true
		}
	}
	return false
}

// normalHost lowercases a host name and drops the brackets of an IPv6 address and a final dot.
func normalHost(h string) string {
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(strings.ToLower(h), ".")
}
