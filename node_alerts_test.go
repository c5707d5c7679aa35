package cairn

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/internal/maintenance"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
	"github.com/cairnflow/cairn/workflow"
)

// quick finishes at its first step.
var quick = workflow.Definition{Type: "alert.quick", States: []workflow.State{
	{Name: "go", Kind: workflow.Start, Next: []string{"done"}, Handler: func(workflow.StepContext) (workflow.Next, error) {
		return workflow.MoveTo("done"), nil
	}},
	{Name: "done", Kind: workflow.End},
}}

// receiver is a local webhook: it answers fail times 500, then 200, and keeps the bodies it took.
type receiver struct {
	mu     sync.Mutex
	fail   int
	hits   int
	bodies []maintenance.AlertBody
	srv    *httptest.Server
}

func newReceiver(t *testing.T, fail int) *receiver {
	r := &receiver{fail: fail}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.hits++
		if r.hits <= r.fail {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		var body maintenance.AlertBody
		if err := json.Unmarshal(b, &body); err != nil || req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.bodies = append(r.bodies, body)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) taken() ([]maintenance.AlertBody, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]maintenance.AlertBody(nil), r.bodies...), r.hits
}

// alertOptions allow the local receiver by name, as --http-allow does, with short backoffs.
func alertOptions() Options {
	o := fastOptions()
	o.Alerts.HTTP.Allow = []string{"127.0.0.1"}
	o.Alerts.Backoff, o.Alerts.MaxBackoff, o.Alerts.Interval = 50*time.Millisecond, 200*time.Millisecond, 50*time.Millisecond
	o.Alerts.DashboardURL = "http://cairn.test/"
	return o
}

func deliveries(t *testing.T, store *persistence.Store) []*persistence.AlertDelivery {
	t.Helper()
	ds, err := store.AlertDeliveryList(context.Background(), persistence.AlertDeliveryListParams{Limit: 100})
	require.NoError(t, err)
	return ds
}

func waitDelivered(t *testing.T, store *persistence.Store, n int) []*persistence.AlertDelivery {
	t.Helper()
	require.Eventually(t, func() bool {
		ds := deliveries(t, store)
		done := 0
		for _, d := range ds {
			if d.Status != persistence.DeliveryPending {
				done++
			}
		}
		return len(ds) == n && done == n
	}, 60*time.Second, 20*time.Millisecond)
	return deliveries(t, store)
}

// A workflow of a rule's type that reaches one of its statuses is POSTed once, with its ID, type,
// status, state, last error, link, rule and time; one of another type or status is not.
func TestAlertDeliveredOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		rec := newReceiver(t, 0)
		node := newNode(t, store, alertOptions(), quick, waiter)
		rule, err := node.CreateAlertRule(ctx, AlertRuleParams{Name: "ends", Types: []string{"alert.quick"},
			Statuses: []persistence.Status{persistence.StatusFinished, persistence.StatusFailed}, WebhookURL: rec.srv.URL + "/hook", Actor: "tester"})
		require.NoError(t, err)
		run(t, node)
		w, err := node.Start(ctx, workflow.StartParams{Type: "alert.quick"})
		require.NoError(t, err)
		other, err := node.Start(ctx, workflow.StartParams{Type: "bulk.waiter"})
		require.NoError(t, err)
		_, err = node.Cancel(ctx, workflow.ChangeParams{ID: other.Workflow.ID})
		require.NoError(t, err)

		ds := waitDelivered(t, store, 1)
		d := ds[0]
		require.Equal(t, persistence.DeliveryDelivered, d.Status)
		require.Equal(t, 1, d.Attempts)
		require.Equal(t, 200, *d.ResponseCode)
		require.Equal(t, rule.ID, d.RuleID)
		require.Equal(t, w.Workflow.ID, d.WorkflowID)
		bodies, hits := rec.taken()
		require.Equal(t, 1, hits)
		b := bodies[0]
		require.Equal(t, "alert.quick", b.Type)
		require.Equal(t, "FINISHED", b.Status)
		require.Equal(t, "done", b.State)
		require.Equal(t, "ends", b.Rule)
		require.Nil(t, b.LastError)
		require.Equal(t, "http://cairn.test/#/workflow?id="+b.ID, b.Link)
		require.NotEmpty(t, b.ID)
		_, err = time.Parse(time.RFC3339Nano, b.Time)
		require.NoError(t, err)

		entries, err := store.AuditList(ctx, persistence.AuditListParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, entries, 1)
		require.Equal(t, "createAlertRule", entries[0].Action)
		require.Equal(t, "tester", entries[0].Actor)
	})
}

// A receiver that fails is tried again with backoff until it takes the delivery; with no rule, a
// workflow's end records nothing.
func TestAlertRetriedThenDelivered(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		rec := newReceiver(t, 2)
		node := newNode(t, store, alertOptions(), quick)
		run(t, node)
		w, err := node.Start(ctx, workflow.StartParams{Type: "alert.quick"})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			got, err := store.WorkflowGet(ctx, w.Workflow.ID)
			require.NoError(t, err)
			return got.Status == persistence.StatusFinished
		}, 60*time.Second, 20*time.Millisecond)
		require.Empty(t, deliveries(t, store), "no rule: no delivery")

		_, err = node.CreateAlertRule(ctx, AlertRuleParams{Name: "all", Statuses: []persistence.Status{persistence.StatusFinished}, WebhookURL: rec.srv.URL})
		require.NoError(t, err)
		_, err = node.Start(ctx, workflow.StartParams{Type: "alert.quick"})
		require.NoError(t, err)
		d := waitDelivered(t, store, 1)[0]
		require.Equal(t, persistence.DeliveryDelivered, d.Status)
		require.Equal(t, 3, d.Attempts)
		require.Equal(t, 200, *d.ResponseCode)
		require.True(t, d.NextAttempt.Sub(d.Created) >= 150*time.Millisecond, "two backoffs of 50ms and 100ms: %s", d.NextAttempt.Sub(d.Created))
		_, hits := rec.taken()
		require.Equal(t, 3, hits)
	})
}

// A delivery leased by a node that died is sent by another once the lease ran out, once.
func TestAlertOfADeadNodeSentByAnother(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		rec := newReceiver(t, 0)
		node := newNode(t, store, alertOptions(), waiter)
		_, err := node.CreateAlertRule(ctx, AlertRuleParams{Name: "cancels", Types: []string{"bulk.waiter"},
			Statuses: []persistence.Status{persistence.StatusCancelled}, WebhookURL: rec.srv.URL})
		require.NoError(t, err)
		w, err := node.Start(ctx, workflow.StartParams{Type: "bulk.waiter"})
		require.NoError(t, err)
		_, err = node.Cancel(ctx, workflow.ChangeParams{ID: w.Workflow.ID})
		require.NoError(t, err)
		leased, err := store.AlertDeliveryClaim(ctx, "a node that died", time.Second, 10)
		require.NoError(t, err)
		require.Len(t, leased, 1)

		run(t, node)
		d := waitDelivered(t, store, 1)[0]
		require.Equal(t, persistence.DeliveryDelivered, d.Status)
		require.Equal(t, 1, d.Attempts)
		bodies, hits := rec.taken()
		require.Equal(t, 1, hits)
		require.Equal(t, "CANCELLED", bodies[0].Status)
	})
}

// Bad input changes nothing: each error names its field.
func TestAlertRuleBadInput(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		node := newNode(t, store, fastOptions())
		_, err := node.CreateAlertRule(ctx, AlertRuleParams{Name: "taken", Statuses: []persistence.Status{persistence.StatusFailed}, WebhookURL: "https://example.com/hook"})
		require.NoError(t, err)
		fails := persistence.StatusFailed
		for _, c := range []struct {
			p     AlertRuleParams
			code  workflow.Code
			field string
		}{
			{AlertRuleParams{Name: "", Statuses: []persistence.Status{fails}, WebhookURL: "https://example.com/"}, workflow.CodeInvalidInput, "name"},
			{AlertRuleParams{Name: "x"}, workflow.CodeInvalidInput, "statuses"},
			{AlertRuleParams{Name: "x", Statuses: []persistence.Status{fails}, WebhookURL: "ftp://example.com/"}, workflow.CodeInvalidInput, "webhookUrl"},
			{AlertRuleParams{Name: "x", Statuses: []persistence.Status{fails}, WebhookURL: "not a url"}, workflow.CodeInvalidInput, "webhookUrl"},
			{AlertRuleParams{Name: "x", Statuses: []persistence.Status{fails}, WebhookURL: "http://127.0.0.1:9/"}, workflow.CodeInvalidInput, "webhookUrl"},
			{AlertRuleParams{Name: "x", Statuses: []persistence.Status{fails}, WebhookURL: "http://10.1.2.3/"}, workflow.CodeInvalidInput, "webhookUrl"},
			{AlertRuleParams{Name: "x", Statuses: []persistence.Status{fails}, WebhookURL: "http://[::1]/"}, workflow.CodeInvalidInput, "webhookUrl"},
			{AlertRuleParams{Name: "x", Statuses: []persistence.Status{fails}, WebhookURL: "http://localhost:8080/"}, workflow.CodeInvalidInput, "webhookUrl"},
			{AlertRuleParams{Name: "taken", Statuses: []persistence.Status{fails}, WebhookURL: "https://example.com/"}, workflow.CodeConflict, "name"},
		} {
			_, err := node.CreateAlertRule(ctx, c.p)
			var we *workflow.Error
			require.True(t, errors.As(err, &we), "%+v: %v", c.p, err)
			require.Equal(t, c.code, we.Code, "%+v: %v", c.p, err)
			require.Equal(t, c.field, we.Field, "%+v: %v", c.p, err)
		}
		err = node.DeleteAlertRule(ctx, 12345, "tester")
		require.Equal(t, workflow.CodeNotFound, workflow.CodeOf(err))
		rules, err := store.AlertRuleList(ctx)
		require.NoError(t, err)
		require.Len(t, rules, 1)
		entries, err := store.AuditList(ctx, persistence.AuditListParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, entries, 1)

		require.NoError(t, node.DeleteAlertRule(ctx, rules[0].ID, "tester"))
		rules, err = store.AlertRuleList(ctx)
		require.NoError(t, err)
		require.Empty(t, rules)
		entries, err = store.AuditList(ctx, persistence.AuditListParams{Limit: 10})
		require.NoError(t, err)
		require.Equal(t, "deleteAlertRule", entries[0].Action)
	})
}

// A webhook that points at a private address when it is dialled (a name that rebinds, here a rule
// stored past the creation check) is refused at dial time: the receiver is never reached.
func TestAlertPrivateAddressRefusedAtSend(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		rec := newReceiver(t, 0)
		opts := fastOptions()
		opts.Alerts.MaxAttempts, opts.Alerts.Interval = 1, 50*time.Millisecond
		node := newNode(t, store, opts, waiter)
		require.NoError(t, store.AlertRuleInsert(ctx, persistence.NewAlertRule("rebound", nil, []persistence.Status{persistence.StatusCancelled}, rec.srv.URL)))
		w, err := node.Start(ctx, workflow.StartParams{Type: "bulk.waiter"})
		require.NoError(t, err)
		_, err = node.Cancel(ctx, workflow.ChangeParams{ID: w.Workflow.ID})
		require.NoError(t, err)
		run(t, node)
		d := waitDelivered(t, store, 1)[0]
		require.Equal(t, persistence.DeliveryFailed, d.Status)
		require.Equal(t, 1, d.Attempts)
		require.Nil(t, d.ResponseCode)
		require.Contains(t, *d.LastError, "address refused")
		_, hits := rec.taken()
		require.Zero(t, hits)
	})
}

// A schedule's own rule alerts on its runs whatever types the rule names; an unknown rule is
// refused, and deleting the rule takes it off the schedule.
func TestScheduleAlertRule(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		rec := newReceiver(t, 0)
		node := newNode(t, store, alertOptions(), quick)
		rule, err := node.CreateAlertRule(ctx, AlertRuleParams{Name: "nightly", Types: []string{"some.other"},
			Statuses: []persistence.Status{persistence.StatusFinished}, WebhookURL: rec.srv.URL})
		require.NoError(t, err)
		unknown := rule.ID + 100
		_, err = node.CreateSchedule(ctx, workflow.ScheduleParams{Type: "alert.quick", Cron: "@every 1s", AlertRuleID: &unknown})
		var we *workflow.Error
		require.True(t, errors.As(err, &we), "%v", err)
		require.Equal(t, workflow.CodeNotFound, we.Code)
		require.Equal(t, "alertRuleId", we.Field)
		sc, err := node.CreateSchedule(ctx, workflow.ScheduleParams{Type: "alert.quick", Cron: "@every 1s", AlertRuleID: &rule.ID})
		require.NoError(t, err)
		run(t, node)
		require.Eventually(t, func() bool {
			bodies, _ := rec.taken()
			return len(bodies) > 0
		}, 60*time.Second, 20*time.Millisecond)
		bodies, _ := rec.taken()
		require.Equal(t, "alert.quick", bodies[0].Type)
		require.Equal(t, "nightly", bodies[0].Rule)

		require.NoError(t, node.DeleteAlertRule(ctx, rule.ID, "tester"))
		got, err := store.ScheduleGet(ctx, sc.ID)
		require.NoError(t, err)
		require.Nil(t, got.AlertRuleID)
	})
}
