package cairn

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/internal/maintenance"
	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
)

// AlertOptions bounds the webhooks of alert rules. Zero values take the defaults named on each field.
type AlertOptions struct {
	// HTTP holds the host rules (the same as HTTP calls': --http-allow and --http-deny) and the
	// timeout of one POST (10s when zero). A webhook on a private, loopback or reserved address is
	// refused at creation and at each dial, unless its host is allowed by name.
	HTTP serverless.HTTPOptions
	// Backoff is the wait after a delivery's first failed attempt, doubled after each (10s), up to
	// MaxBackoff (20m); MaxAttempts bounds the attempts before it is FAILED (10: about an hour).
	Backoff, MaxBackoff time.Duration
	MaxAttempts         int
	// Interval is how often a node looks for due deliveries (1s).
	Interval time.Duration
	// DashboardURL, when set, is the dashboard's base URL (https://cairn.example.com/): each body
	// then links to the workflow's page.
	DashboardURL string
}

func (o AlertOptions) withDefaults(expiry time.Duration) AlertOptions {
	if o.HTTP.Timeout <= 0 {
		o.HTTP.Timeout = 10 * time.Second
	}
	if o.Backoff <= 0 {
		o.Backoff = 10 * time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 20 * time.Minute
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 10
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	return o
}

// setupAlerts gives the engine the webhook URL check and makes the outcome counter.
func (n *Node) setupAlerts() {
	n.engine.SetWebhookCheck(n.opts.Alerts.HTTP.CheckURL)
	n.alertOutcomes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_alert_deliveries_total",
		Help: "Webhook attempts of alert deliveries by this node, by outcome: delivered, retry (failed, to be tried again), failed (no attempt left)."},
		[]string{"outcome"})
}

// alertSender makes the service sending this node's share of alert deliveries.
func (n *Node) alertSender(owner string) (maintenance.Service, error) {
	o := n.opts.Alerts
	return maintenance.NewAlertSender(maintenance.AlertSenderConfig{Store: n.store, Owner: owner,
		Lease: max(n.opts.Expiry, 2*o.HTTP.Timeout), Interval: o.Interval, Client: o.HTTP.Client(), Prepare: o.HTTP.AllowPrivate,
		Backoff: o.Backoff, MaxBackoff: o.MaxBackoff, MaxAttempts: o.MaxAttempts, DashboardURL: o.DashboardURL,
		Outcome: func(outcome string) { n.alertOutcomes.WithLabelValues(outcome).Inc() }, Logger: n.log})
}

// AlertRuleParams is the input of CreateAlertRule.
type AlertRuleParams = engine.AlertRuleParams

// CreateAlertRule makes an alert rule (INVALID_INPUT for a bad name, no status, or a webhook URL
// HTTP calls may not reach; CONFLICT for a name taken), with its audit entry.
func (n *Node) CreateAlertRule(ctx context.Context, p AlertRuleParams) (*persistence.AlertRule, error) {
	return n.engine.CreateAlertRule(ctx, p)
}

// DeleteAlertRule deletes an alert rule (NOT_FOUND when none has this ID), with its audit entry.
func (n *Node) DeleteAlertRule(ctx context.Context, id int64, actor string) error {
	return n.engine.DeleteAlertRule(ctx, id, actor)
}
