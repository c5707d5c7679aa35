package persistence

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// AlertRule sends a workflow's status change to a webhook: when a workflow of one of Types (none:
// every type) reaches one of Statuses.
type AlertRule struct {
	bun.BaseModel `bun:"table:alert_rules,alias:ar"`

	ID   int64  `bun:"id,pk,autoincrement"`
	Name string `bun:"name,notnull"`
	// TypesDoc and StatusesDoc are JSON arrays of strings (Types and Statuses read them).
	TypesDoc    string    `bun:"types,notnull"`
	StatusesDoc string    `bun:"statuses,notnull"`
	WebhookURL  string    `bun:"webhook_url,notnull"`
	Created     time.Time `bun:"created,notnull"`

	// types and statuses are TypesDoc and StatusesDoc read once (parsed), for rules the alert
	// cache matches every status change against.
	types    []string
	statuses []Status
	parsed   bool
}

// NewAlertRule makes a rule (not stored).
func NewAlertRule(name string, types []string, statuses []Status, webhookURL string) *AlertRule {
	t, _ := json.Marshal(append([]string{}, types...))
	s, _ := json.Marshal(append([]Status{}, statuses...))
	return &AlertRule{Name: name, TypesDoc: string(t), StatusesDoc: string(s), WebhookURL: webhookURL}
}

// Types returns the rule's workflow types (empty: every type).
func (r *AlertRule) Types() []string {
	if r.parsed {
		return r.types
	}
	var out []string
	_ = json.Unmarshal([]byte(r.TypesDoc), &out)
	return out
}

// Statuses returns the statuses the rule alerts on.
func (r *AlertRule) Statuses() []Status {
	if r.parsed {
		return r.statuses
	}
	var out []Status
	_ = json.Unmarshal([]byte(r.StatusesDoc), &out)
	return out
}

// parse reads the rule's types and statuses once, for the matches that follow.
func (r *AlertRule) parse() {
	r.types, r.statuses = r.Types(), r.Statuses()
	r.parsed = true
}

// alertsOn reports whether the rule alerts on some workflow reaching status.
func (r *AlertRule) alertsOn(status Status) bool { return slices.Contains(r.Statuses(), status) }

// matches reports whether a workflow of typ reaching status alerts through r.
func (r *AlertRule) matches(typ string, status Status) bool {
	ts := r.Types()
	return r.alertsOn(status) && (len(ts) == 0 || slices.Contains(ts, typ))
}

// DeliveryStatus is where a delivery stands.
type DeliveryStatus string

// The statuses of a delivery.
const (
	DeliveryPending   DeliveryStatus = "PENDING"
	DeliveryDelivered DeliveryStatus = "DELIVERED"
	DeliveryFailed    DeliveryStatus = "FAILED"
)

// AlertDelivery is one workflow's status change to be POSTed to one rule's webhook. The rule's name
// and URL are copied so that a delivery recorded before its rule was deleted is still sent.
type AlertDelivery struct {
	bun.BaseModel `bun:"table:alert_deliveries,alias:ad"`

	ID             int64          `bun:"id,pk,autoincrement"`
	RuleID         int64          `bun:"rule_id,notnull"`
	RuleName       string         `bun:"rule_name,notnull"`
	WebhookURL     string         `bun:"webhook_url,notnull"`
	WorkflowID     int64          `bun:"workflow_id,notnull"`
	WorkflowType   string         `bun:"workflow_type,notnull"`
	WorkflowStatus Status         `bun:"workflow_status,notnull"`
	State          string         `bun:"state,notnull"`
	Status         DeliveryStatus `bun:"status,notnull"`
	Attempts       int            `bun:"attempts,notnull"`
	NextAttempt    time.Time      `bun:"next_attempt,notnull"`
	LeaseOwner     *string        `bun:"lease_owner"`
	LeaseUntil     *time.Time     `bun:"lease_until"`
	LastError      *string        `bun:"last_error"`
	ResponseCode   *int           `bun:"response_code"`
	Created        time.Time      `bun:"created,notnull"`
	Finished       *time.Time     `bun:"finished"`
}

// alertRulesTTL bounds how long a node matches ended workflows against rules it read before: a rule
// made or deleted on another node is seen within it (on this node at once).
const alertRulesTTL = 2 * time.Second

// alertCache holds the rules in memory so that a workflow's status change costs no statement when
// no rule exists; shared by a Store and its transactions.
type alertCache struct {
	mu    sync.Mutex
	rules []*AlertRule
	// schedules maps the launch token of a schedule's runs ("schedule:ID") to its own rule.
	schedules map[string]*AlertRule
	loaded    time.Time
}

func (c *alertCache) get(ctx context.Context, s *Store) ([]*AlertRule, map[string]*AlertRule, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded.IsZero() && time.Since(c.loaded) < alertRulesTTL {
		return c.rules, c.schedules, nil
	}
	var rules []*AlertRule
	if err := s.idb.NewSelect().Model(&rules).OrderExpr("id").Scan(ctx); err != nil {
		return nil, nil, fmt.Errorf("error reading the alert rules: %w", err)
	}
	byID := make(map[int64]*AlertRule, len(rules))
	for _, r := range rules {
		r.parse()
		byID[r.ID] = r
	}
	schedules := map[string]*AlertRule{}
	if len(rules) > 0 {
		var rows []struct {
			ID          int64 `bun:"id"`
			AlertRuleID int64 `bun:"alert_rule_id"`
		}
		if err := s.idb.NewSelect().Table("schedules").Column("id", "alert_rule_id").Where("alert_rule_id IS NOT NULL").Scan(ctx, &rows); err != nil {
			return nil, nil, fmt.Errorf("error reading the schedules' alert rules: %w", err)
		}
		for _, row := range rows {
			if r := byID[row.AlertRuleID]; r != nil {
				schedules[fmt.Sprintf("schedule:%d", row.ID)] = r
			}
		}
	}
	c.rules, c.schedules, c.loaded = rules, schedules, time.Now()
	return rules, schedules, nil
}

// AlertRulesChanged makes this node read the alert rules and the schedules' rules again at the
// next status change (a schedule with an alert rule was made).
func (s *Store) AlertRulesChanged() { s.alerts.invalidate() }

func (c *alertCache) invalidate() {
	c.mu.Lock()
	c.loaded = time.Time{}
	c.mu.Unlock()
}

// AlertRuleInsert stores a rule (in the caller's transaction, with its audit entry).
func (s *Store) AlertRuleInsert(ctx context.Context, r *AlertRule) error {
	if r.Created.IsZero() {
		r.Created = Now()
	}
	if _, err := s.idb.NewInsert().Model(r).Returning("id").Exec(ctx); err != nil {
		return fmt.Errorf("error writing an alert rule: %w", err)
	}
	s.alerts.invalidate()
	return nil
}

// AlertRuleByName returns the rule of that name (nil: none).
func (s *Store) AlertRuleByName(ctx context.Context, name string) (*AlertRule, error) {
	var rules []*AlertRule
	if err := s.idb.NewSelect().Model(&rules).Where("name = ?", name).Scan(ctx); err != nil {
		return nil, fmt.Errorf("error reading an alert rule: %w", err)
	}
	if len(rules) == 0 {
		return nil, nil
	}
	return rules[0], nil
}

// AlertRuleDelete deletes a rule; it reports whether there was one.
func (s *Store) AlertRuleDelete(ctx context.Context, id int64) (bool, error) {
	res, err := s.idb.NewDelete().Model((*AlertRule)(nil)).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("error deleting alert rule %d: %w", id, err)
	}
	n, _ := res.RowsAffected()
	s.alerts.invalidate()
	return n > 0, nil
}

// AlertRuleList returns every rule, oldest first.
func (s *Store) AlertRuleList(ctx context.Context) ([]*AlertRule, error) {
	var rules []*AlertRule
	if err := s.idb.NewSelect().Model(&rules).OrderExpr("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("error reading the alert rules: %w", err)
	}
	return rules, nil
}

// enqueueAlerts records a delivery for each event whose status some rule alerts on, in the
// transaction that writes the events. With no rule it runs no statement (the rules are cached).
func (s *Store) enqueueAlerts(ctx context.Context, events []*ChangeEvent) error {
	rules, schedules, err := s.alerts.get(ctx, s)
	if err != nil || len(rules) == 0 {
		return err
	}
	var ids []int64
	for _, e := range events {
		for _, r := range rules {
			if r.alertsOn(e.Status) {
				ids = append(ids, e.WorkflowID)
				break
			}
		}
	}
	if len(ids) == 0 {
		return nil
	}
	var rows []struct {
		ID          int64   `bun:"id"`
		Type        string  `bun:"type"`
		LaunchToken *string `bun:"launch_token"`
	}
	if err := s.idb.NewSelect().Table("workflows").Column("id", "type", "launch_token").Where("id IN (?)", bunIn(ids)).Scan(ctx, &rows); err != nil {
		return fmt.Errorf("error reading the types of ended workflows: %w", err)
	}
	types := make(map[int64]string, len(rows))
	own := map[int64]*AlertRule{}
	for _, r := range rows {
		types[r.ID] = r.Type
		if r.LaunchToken != nil && schedules[*r.LaunchToken] != nil {
			own[r.ID] = schedules[*r.LaunchToken]
		}
	}
	type key struct {
		rule, workflow int64
		status         Status
	}
	seen := map[key]bool{}
	now := Now()
	var out []*AlertDelivery
	for _, e := range events {
		typ, ok := types[e.WorkflowID]
		if !ok {
			continue
		}
		for _, r := range rules {
			k := key{r.ID, e.WorkflowID, e.Status}
			// A schedule's own rule alerts on its statuses whatever types it names.
			scheduled := own[e.WorkflowID] == r && r.alertsOn(e.Status)
			if seen[k] || !(scheduled || r.matches(typ, e.Status)) {
				continue
			}
			seen[k] = true
			out = append(out, &AlertDelivery{RuleID: r.ID, RuleName: r.Name, WebhookURL: r.WebhookURL, WorkflowID: e.WorkflowID,
				WorkflowType: typ, WorkflowStatus: e.Status, State: e.State, Status: DeliveryPending, NextAttempt: now, Created: now})
		}
	}
	if len(out) == 0 {
		return nil
	}
	if _, err := s.idb.NewInsert().Model(&out).Exec(ctx); err != nil {
		return fmt.Errorf("error recording %d alert deliveries: %w", len(out), err)
	}
	return nil
}
