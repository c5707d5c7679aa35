package graph

import (
	"context"
	"errors"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/internal/engine"
	"github.com/cairnflow/cairn/persistence"
)

// createAlertRule makes a rule from createAlertRule's input.
func (r *Resolver) createAlertRule(ctx context.Context, in model.CreateAlertRuleInput) (*model.CreateAlertRulePayload, error) {
	rule, err := r.engine.CreateAlertRule(ctx, engine.AlertRuleParams{Name: in.Name, Types: in.Types, Statuses: in.Statuses,
		WebhookURL: in.WebhookURL, Actor: actorOf(ctx)})
	if err != nil {
		return nil, err
	}
	return &model.CreateAlertRulePayload{AlertRule: rule}, nil
}

// deleteAlertRule deletes the rule of deleteAlertRule's input.
func (r *Resolver) deleteAlertRule(ctx context.Context, in model.DeleteAlertRuleInput) (*model.DeleteAlertRulePayload, error) {
	id, err := decodeID("id", kindAlertRule, in.ID)
	if err != nil {
		return nil, err
	}
	if err := r.engine.DeleteAlertRule(ctx, id, actorOf(ctx)); err != nil {
		return nil, err
	}
	return &model.DeleteAlertRulePayload{Deleted: true}, nil
}

// alertDeliveries returns a page of deliveries, newest first.
func (r *Resolver) alertDeliveries(ctx context.Context, first *int, after *string, filter *model.AlertDeliveryFilter) (*model.AlertDeliveryPage, error) {
	read, before, err := newestFirstArgs(first, after, kindAlertDeliv)
	if err != nil {
		return nil, err
	}
	p := persistence.AlertDeliveryListParams{Limit: read, BeforeID: before}
	if filter != nil {
		if filter.RuleID != nil {
			id, err := decodeID("filter.ruleId", kindAlertRule, *filter.RuleID)
			if err != nil {
				return nil, err
			}
			p.RuleID = &id
		}
		if filter.WorkflowID != nil {
			id, err := decodeID("filter.workflowId", kindWorkflow, *filter.WorkflowID)
			if err != nil {
				return nil, err
			}
			p.WorkflowID = &id
		}
		p.Status = filter.Status
	}
	rows, err := r.store.AlertDeliveryList(ctx, p)
	if err != nil {
		return nil, err
	}
	out := &model.AlertDeliveryPage{}
	out.Items, out.HasNextPage, out.EndCursor = newestFirstPage(rows, read, kindAlertDeliv, func(d *persistence.AlertDelivery) int64 { return d.ID })
	return out, nil
}

// alertWorkflow returns a delivery's workflow (nil once deleted).
func (r *Resolver) alertWorkflow(ctx context.Context, d *persistence.AlertDelivery) (*persistence.Workflow, error) {
	w, err := loadersFor(ctx, r.store).workflows.Load(ctx, d.WorkflowID)()
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, nil
	}
	return w, err
}
