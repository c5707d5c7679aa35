package maintenance

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/cairnflow/cairn/persistence"
)

// AlertSenderConfig configures an AlertSender.
type AlertSenderConfig struct {
	Store *persistence.Store
	// Owner names this node on the deliveries it leases.
	Owner string
	// Lease is how long a leased delivery stays this node's: a node that dies mid-send leaves it to
	// another once it ran out. It must exceed the client's timeout.
	Lease time.Duration
	// Interval is how often it looks for due deliveries.
	Interval time.Duration
	// Client sends the POSTs (with the address checks of HTTP calls); Prepare gives each request's
	// context (allowing private addresses to hosts allowed by name).
	Client  *http.Client
	Prepare func(ctx context.Context, host string) context.Context
	// Backoff is the wait after the first failed attempt, doubled after each (capped at MaxBackoff);
	// MaxAttempts bounds the attempts before a delivery is FAILED.
	Backoff, MaxBackoff time.Duration
	MaxAttempts         int
	// DashboardURL, when set, is the base of the link to the workflow's page in each body.
	DashboardURL string
	// Outcome, when not nil, counts each attempt's outcome (delivered, retry, failed).
	Outcome func(outcome string)
	Logger  *slog.Logger
}

// AlertSender POSTs the recorded alert deliveries to their webhooks, with retries and
// exponential backoff. Every node runs it; a delivery is one node's at a time by a lease on its row.
type AlertSender struct {
	cfg AlertSenderConfig
	run runner
}

// NewAlertSender checks the config and returns the service.
func NewAlertSender(cfg AlertSenderConfig) (*AlertSender, error) {
	if cfg.Store == nil || cfg.Client == nil || cfg.Logger == nil || cfg.Owner == "" || cfg.MaxAttempts <= 0 {
		return nil, errors.New("error configuring the alert sender: it needs a store, a client, an owner, a logger and MaxAttempts")
	}
	for _, d := range []struct {
		n string
		d time.Duration
	}{{"lease", cfg.Lease}, {"interval", cfg.Interval}, {"backoff", cfg.Backoff}, {"maximum backoff", cfg.MaxBackoff}} {
		if err := positive("the alert sender's "+d.n, d.d); err != nil {
			return nil, err
		}
	}
	if cfg.Prepare == nil {
		cfg.Prepare = func(ctx context.Context, _ string) context.Context { return ctx }
	}
	return &AlertSender{cfg: cfg, run: runner{name: "alert sender"}}, nil
}

// Start implements Service.
func (a *AlertSender) Start(ctx context.Context) error {
	return a.run.start(ctx, func(ctx context.Context) {
		every(ctx, a.cfg.Interval, func(ctx context.Context) {
			if err := a.SendDue(ctx); err != nil && ctx.Err() == nil {
				a.cfg.Logger.Warn("sending alerts failed", "error", err)
			}
		})
	})
}

// Stop implements Service.
func (a *AlertSender) Stop() { a.run.stop() }

// SendDue leases the due deliveries and sends each once.
func (a *AlertSender) SendDue(ctx context.Context) error {
	ds, err := a.cfg.Store.AlertDeliveryClaim(ctx, a.cfg.Owner, a.cfg.Lease, 50)
	for _, d := range ds {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		attempt := a.send(ctx, d)
		if _, rerr := a.cfg.Store.AlertDeliveryRecord(ctx, d.ID, a.cfg.Owner, attempt); rerr != nil {
			return rerr
		}
		if a.cfg.Outcome != nil {
			a.cfg.Outcome(map[persistence.DeliveryStatus]string{persistence.DeliveryDelivered: "delivered",
				persistence.DeliveryPending: "retry", persistence.DeliveryFailed: "failed"}[attempt.Status])
		}
	}
	return err
}

// AlertBody is the JSON a webhook receives.
type AlertBody struct {
	// ID is the workflow's ID in the API.
	ID        string  `json:"id"`
	Type      string  `json:"type"`
	Status    string  `json:"status"`
	State     string  `json:"state"`
	LastError *string `json:"lastError"`
	Link      string  `json:"link,omitempty"`
	Rule      string  `json:"rule"`
	Time      string  `json:"time"`
}

func (a *AlertSender) body(ctx context.Context, d *persistence.AlertDelivery) ([]byte, error) {
	id := base64.RawURLEncoding.EncodeToString([]byte("Workflow:" + strconv.FormatInt(d.WorkflowID, 10)))
	b := AlertBody{ID: id, Type: d.WorkflowType, Status: string(d.WorkflowStatus), State: d.State, Rule: d.RuleName,
		Time: d.Created.UTC().Format(time.RFC3339Nano)}
	if w, err := a.cfg.Store.WorkflowGet(ctx, d.WorkflowID); err == nil {
		b.LastError = w.LastError
	}
	if a.cfg.DashboardURL != "" {
		b.Link = a.cfg.DashboardURL + "#/workflow?id=" + url.QueryEscape(id)
	}
	return json.Marshal(b)
}

// send makes one attempt and says what to record.
func (a *AlertSender) send(ctx context.Context, d *persistence.AlertDelivery) persistence.AlertAttempt {
	fail := func(msg string, code *int) persistence.AlertAttempt {
		out := persistence.AlertAttempt{Status: persistence.DeliveryPending, Error: &msg, ResponseCode: code}
		if d.Attempts+1 >= a.cfg.MaxAttempts {
			out.Status = persistence.DeliveryFailed
			return out
		}
		wait := a.cfg.Backoff << min(d.Attempts, 30)
		if wait <= 0 || wait > a.cfg.MaxBackoff {
			wait = a.cfg.MaxBackoff
		}
		out.Next = time.Now().Add(wait)
		return out
	}
	body, err := a.body(ctx, d)
	if err != nil {
		return fail(err.Error(), nil)
	}
	u, err := url.Parse(d.WebhookURL)
	if err != nil {
		return fail("invalid webhook URL", nil)
	}
	req, err := http.NewRequestWithContext(a.cfg.Prepare(ctx, u.Hostname()), http.MethodPost, d.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return fail(err.Error(), nil)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "cairn-alerts")
	resp, err := a.cfg.Client.Do(req)
	if err != nil {
		return fail(err.Error(), nil)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	code := resp.StatusCode
	if code < 200 || code > 299 {
		return fail(fmt.Sprintf("the webhook answered %d", code), &code)
	}
	return persistence.AlertAttempt{Status: persistence.DeliveryDelivered, ResponseCode: &code}
}
