package graph

// Lists paged newest first by their rows' IDs (the audit log, alert deliveries): the page's
// arguments and the page cut from the rows read.

// newestFirstArgs reads a newest-first list's arguments: first (1 to 1000; 50 when null) and after,
// the cursor of the page before (an ID of kind), into the rows to read (one more than the page,
// to see whether another follows) and the ID they come before (0: from the newest).
func newestFirstArgs(first *int, after *string, kind string) (read int, before int64, err error) {
	limit := 50
	if first != nil {
		if limit, err = listFirst(first); err != nil {
			return 0, 0, err
		}
	}
	if after != nil {
		if before, err = decodeID("after", kind, *after); err != nil {
			return 0, 0, err
		}
	}
	return limit + 1, before, nil
}

// newestFirstPage cuts the rows read for newestFirstArgs to their page: its items (never nil),
// whether another page follows, and the cursor of its last item.
func newestFirstPage[T any](rows []T, read int, kind string, id func(T) int64) (items []T, more bool, end *string) {
	items = rows
	if more = len(rows) >= read; more {
		items = rows[:read-1]
	}
	if items == nil {
		items = []T{}
	}
	if n := len(items); n > 0 {
		c := encodeID(kind, id(items[n-1]))
		end = &c
	}
	return items, more, end
}
