package persistence

import "github.com/uptrace/bun"

// bunIn expands a slice into the comma-separated list inside "IN (?)".
func bunIn(v any) any { return bun.List(v) }
