package engine

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/cairnflow/cairn/persistence"
)

// AlertRuleParams is the input of CreateAlertRule.
type AlertRuleParams struct {
	Name string
	// Types are the workflow types the rule alerts on (none: every type).
	Types      []string
	Statuses   []persistence.Status
	WebhookURL string
	Actor      string
}

// webhookCheck refuses webhook URLs HTTP calls may not reach (set by the node).
type webhookCheck = func(ctx context.Context, rawURL string) error

var noWebhookCheck webhookCheck = func(context.Context, string) error { return nil }

// alertState holds the engine's webhook URL check.
type alertState struct{ check atomic.Pointer[webhookCheck] }

// SetWebhookCheck sets the check a rule's webhook URL passes at creation (the node passes the
// address rules of HTTP calls).
func (e *Engine) SetWebhookCheck(check func(ctx context.Context, rawURL string) error) {
	c := webhookCheck(check)
	e.alerts.check.Store(&c)
}

// CreateAlertRule validates and stores a rule, with its audit entry, in one transaction.
func (e *Engine) CreateAlertRule(ctx context.Context, p AlertRuleParams) (*persistence.AlertRule, error) {
	name := strings.TrimSpace(p.Name)
	if name == "" || len(name) > 200 {
		return nil, invalid("name", "an alert rule needs a name of 1 to 200 characters")
	}
	if len(p.Statuses) == 0 {
		return nil, invalid("statuses", "an alert rule needs at least one status")
	}
	for _, s := range p.Statuses {
		if s == persistence.StatusCreated {
			return nil, invalid("statuses", "a workflow never reaches CREATED: alert on the statuses it changes to")
		}
	}
	for _, t := range p.Types {
		if strings.TrimSpace(t) == "" {
			return nil, invalid("types", "a workflow type must not be empty")
		}
	}
	if len(p.WebhookURL) > 2000 {
		return nil, invalid("webhookUrl", "the webhook URL is longer than 2000 characters")
	}
	check := noWebhookCheck
	if c := e.alerts.check.Load(); c != nil {
		check = *c
	}
	if err := check(ctx, p.WebhookURL); err != nil {
		return nil, invalid("webhookUrl", "the webhook URL is refused: %v", err)
	}
	r := persistence.NewAlertRule(name, p.Types, p.Statuses, p.WebhookURL)
	err := e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		if old, err := tx.AlertRuleByName(ctx, name); err != nil {
			return err
		} else if old != nil {
			return conflictOn("name", "an alert rule named %q exists", name)
		}
		if err := tx.AlertRuleInsert(ctx, r); err != nil {
			return err
		}
		return audit(ctx, tx, p.Actor, "createAlertRule", subjectOf("AlertRule", r.ID), "",
			map[string]any{"name": name, "types": r.Types(), "statuses": r.Statuses(), "webhookUrl": p.WebhookURL})
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// checkScheduleAlertRule refuses a schedule's alert rule that does not exist.
func (e *Engine) checkScheduleAlertRule(ctx context.Context, id *int64) error {
	if id == nil {
		return nil
	}
	rules, err := e.store.AlertRuleList(ctx)
	if err != nil {
		return err
	}
	for _, r := range rules {
		if r.ID == *id {
			return nil
		}
	}
	return notFound("alertRuleId", "no alert rule has this ID")
}

// DeleteAlertRule deletes a rule, with its audit entry; deliveries already recorded are still sent.
func (e *Engine) DeleteAlertRule(ctx context.Context, id int64, actor string) error {
	return e.store.Tx(ctx, func(ctx context.Context, tx *persistence.Store) error {
		ok, err := tx.AlertRuleDelete(ctx, id)
		if err != nil {
			return err
		}
		if !ok {
			return notFound("id", "no alert rule has this ID")
		}
		if err := tx.ScheduleClearAlertRule(ctx, id); err != nil {
			return err
		}
		return audit(ctx, tx, actor, "deleteAlertRule", subjectOf("AlertRule", id), "", nil)
	})
}
