package graph_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// A workflow's status change costs no alert statement when no rule exists, nor when no rule
// alerts on its new status (the rules are cached); one a rule alerts on records its delivery in
// the same transaction (on every backend).
func TestStatusChangesRunAlertStatementsOnlyForRulesThatMatch(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		b := setup(t, store)
		counter := &statementCounter{}
		store.DB().AddQueryHook(counter) //lint:ignore SA1019 the hook must see the statements of this very DB, not of a copy
		// alerting are a cancel's statements for alerts: on their tables, and the read of the
		// ended workflows' types and launch tokens.
		cancel := func() []string {
			t.Helper()
			res, err := b.engine.Start(ctx, workflow.StartParams{Type: "test.flow"})
			require.NoError(t, err)
			var alerting []string
			for _, q := range counter.count(func() {
				_, err := b.engine.Cancel(ctx, workflow.ChangeParams{ID: res.Workflow.ID})
				require.NoError(t, err)
			}) {
				if strings.Contains(q, "alert_") || strings.Contains(q, "launch_token") && !strings.Contains(q, "definition_version") {
					alerting = append(alerting, q)
				}
			}
			return alerting
		}
		cancel() // the cache's first read of the (no) rules
		require.Empty(t, cancel(), "no rule: no alert statement")

		_, err := b.engine.CreateAlertRule(ctx, engine.AlertRuleParams{Name: "failures", Statuses: []persistence.Status{persistence.StatusFailed},
			WebhookURL: "http://127.0.0.1:1/hook"})
		require.NoError(t, err)
		cancel() // the cache reads the rule
		require.Empty(t, cancel(), "a rule on FAILED only: a cancel runs no alert statement")

		_, err = b.engine.CreateAlertRule(ctx, engine.AlertRuleParams{Name: "cancels", Statuses: []persistence.Status{persistence.StatusCancelled},
			WebhookURL: "http://127.0.0.1:1/hook"})
		require.NoError(t, err)
		cancel()
		stmts := cancel()
		require.Len(t, stmts, 2, "the ended workflow's type, then its delivery: %q", stmts)
		require.Contains(t, stmts[1], "alert_deliveries")
	})
}
