// Package graphiql serves GraphiQL from assets embedded in the binary (GraphiQL 3.9.0, React
// 18.3.1, graphql-ws 5.16.0, all MIT; their builds as published on npm), so the page works on a
// machine with no internet access. Subscriptions run over graphql-ws.
package graphiql

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed index.html start.js assets
var files embed.FS

// Handler serves the page at "/" and its assets under "/graphiql/", talking to the GraphQL
// endpoint at "/graphql" beside it.
func Handler() http.Handler {
	assets, err := fs.Sub(files, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	mux := http.NewServeMux()
	static := http.StripPrefix("/graphiql/", http.FileServerFS(assets))
	mux.Handle("GET /graphiql/", immutable(static))
	mux.HandleFunc("GET /graphiql/start.js", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, files, "start.js")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, files, "index.html")
	})
	return mux
}

// immutable lets browsers keep the vendored builds: they change only with cairn's version.
func immutable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=86400")
		next.ServeHTTP(w, r)
	})
}
