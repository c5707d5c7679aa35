package persistence

import (
	"context"

	"github.com/uptrace/bun"
)

// KeyHeadsForTest is keyHeadsLateral, for the plan tests of the external test package.
var KeyHeadsForTest = keyHeadsLateral

// KeyHeadsUnionForTest is keyHeads, the key heads' statement of SQLite and MariaDB.
var KeyHeadsUnionForTest = keyHeads

// KeyHeadsOfOnesForTest is keyHeadsOfOnes, SQLite's statement of the one head of each of many keys.
var KeyHeadsOfOnesForTest = keyHeadsOfOnes

// KeyHeadsForTestOf asks KeyHeadsForTest for the oldest due workflow of each key.
func KeyHeadsForTestOf(keys ...string) []keyHead {
	out := make([]keyHead, len(keys))
	for i, k := range keys {
		out[i] = keyHead{key: k, n: 1}
	}
	return out
}

// HandoffForTest is the statement by which a completion on PostgreSQL hands slots on, with its
// arguments, for the plan tests of the external test package.
func (s *Store) HandoffForTest(p WorkflowClaimParams, f FlowSpec, keys []string, freed map[string]int) (string, []any) {
	return s.flowHandoffQuery(p, f, keys, freed)
}

// KeysAfterForTest is the statement of a key walk (flowKeysAfter), for the plan tests.
var KeysAfterForTest = flowKeysAfterQuery

// ClaimForTest is the statement by which WorkflowClaim claims several types on PostgreSQL, with
// its parameters ($1, $2, ...), for the plan tests.
func (s *Store) ClaimForTest(p WorkflowClaimParams) (string, []any) {
	q, args := pgClaimByType(s.newClaimStatement(p))
	q, args, err := pgParams(s.db.QueryGen(), q, args)
	if err != nil {
		panic(err)
	}
	return q, args
}

// FlowHoldersQueryForTest is flowHoldersQuery, for the plan tests of the external test package.
var FlowHoldersQueryForTest = flowHoldersQuery

// FlowCandidatesQueryForTest is flowCandidatesQuery, for the plan tests of the external test package.
var FlowCandidatesQueryForTest = flowCandidatesQuery

// FlowCandidateLimitForTest is flowCandidateLimit, for the tests of the external test package.
var FlowCandidateLimitForTest = flowCandidateLimit

// FlowKeysAfterForTest runs a key walk (flowKeysAfter) of store's on conn (a bun.Conn or a
// bun.Tx), so that a test reads the session's or the transaction's counters after it.
func FlowKeysAfterForTest(ctx context.Context, store *Store, conn bun.IDB, typ, after string, n int) ([]string, error) {
	return StoreOnForTest(store, conn).flowKeysAfter(ctx, typ, after, n)
}

// StoreOnForTest is store running its statements on conn (a bun.Conn or a bun.Tx), so that a test
// reads the session's or the transaction's counters after them.
func StoreOnForTest(store *Store, conn bun.IDB) *Store {
	on := *store
	on.idb = conn
	return &on
}

// SQLiteLeaseQueryForTest is SQLite's lease statement for functions, for the plan tests.
func SQLiteLeaseQueryForTest(functions []string, limit int) (string, []any) {
	return sqliteLeaseQuery(leaseStatement{Set: "worker = ?", SetArgs: []any{"w"}, Functions: functions, Limit: limit})
}

// WaitingForForTest is the predicate of workflows_wait_signal_idx as the statements name it.
const WaitingForForTest = waitingFor
