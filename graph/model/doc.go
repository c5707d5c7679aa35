// Package model holds the GraphQL types that are not Store rows: the JSON scalar, Relay connections
// and the subscription event (hand-written), and the simple types gqlgen generates from
// schema.graphqls and mutations.graphqls (models_gen.go).
package model

// Node is the Go side of the GraphQL Node interface: any of the Store rows that have an opaque ID
// (gqlgen switches on the concrete type).
type Node any
