package graph

// optional is nil for "" (a field that does not apply), else a pointer to s.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
