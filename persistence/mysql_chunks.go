package persistence

import (
	"context"
	"reflect"
)

// mysqlStatementBytes bounds the data one statement carries on MariaDB and MySQL, which reset the
// connection on a packet over max_allowed_packet (16 MiB by default on MariaDB 10.11 and MySQL 8):
// a batch of workflows with large variables is written in several statements of about this size,
// leaving room for the escaping of the text.
const mysqlStatementBytes = 4 << 20

// chunks splits n items into consecutive ranges [lo, hi) whose sizes add up to at most budget
// bytes; an item larger than budget has a range of its own.
func chunks(n int, size func(i int) int, budget int) [][2]int {
	var out [][2]int
	lo, sum := 0, 0
	for i := 0; i < n; i++ {
		s := size(i)
		if i > lo && sum+s > budget {
			out = append(out, [2]int{lo, i})
			lo, sum = i, 0
		}
		sum += s
	}
	if lo < n {
		out = append(out, [2]int{lo, n})
	}
	return out
}

// rowBytes is about how many bytes a row's text and binary fields take in a statement.
func rowBytes(v reflect.Value) int {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return 0
		}
		v = v.Elem()
	}
	n := 64 // numbers, times and the statement's punctuation
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() == reflect.Pointer && !f.IsNil() {
			f = f.Elem()
		}
		switch {
		case f.Kind() == reflect.String:
			n += f.Len()
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Uint8:
			n += f.Len()
		}
	}
	return n
}

// bunInsertChunked is bunInsert in statements of at most mysqlStatementBytes of data; the rows get
// their IDs as with one statement.
func bunInsertChunked[T any](ctx context.Context, s *Store, rows []*T, returnIDs bool) error {
	for _, p := range chunks(len(rows), func(i int) int { return rowBytes(reflect.ValueOf(rows[i])) }, mysqlStatementBytes) {
		if err := bunInsert(ctx, s, rows[p[0]:p[1]], returnIDs); err != nil {
			return err
		}
	}
	return nil
}
