package graph

import (
	"context"
	"encoding/json"

	"github.com/cairnflow/cairn/persistence"
)

// Reads is what the resolvers, their dataloaders and the live event hub read: workflows and their
// history, definitions, executors, schedules and change events. Writes go through the engine's
// operations, never through Reads. *persistence.Store implements it.
type Reads interface {
	AlertDeliveryList(ctx context.Context, p persistence.AlertDeliveryListParams) ([]*persistence.AlertDelivery, error)
	AlertRuleList(ctx context.Context) ([]*persistence.AlertRule, error)
	ActionGetMany(ctx context.Context, ids []int64) ([]*persistence.Action, error)
	ActionList(ctx context.Context, p persistence.ActionListParams) ([]*persistence.Action, error)
	ActionVariableList(ctx context.Context, actionIDs []int64) ([]*persistence.ActionVariable, error)
	ActivityLogList(ctx context.Context, p persistence.ActivityLogListParams) ([]*persistence.ActivityLog, error)
	AuditList(ctx context.Context, p persistence.AuditListParams) ([]*persistence.AuditEntry, error)
	BulkFailurePage(ctx context.Context, opID, afterID int64, limit int) ([]*persistence.BulkTarget, error)
	BulkOperationGet(ctx context.Context, id int64) (*persistence.BulkOperation, error)
	BulkOperationPage(ctx context.Context, beforeID int64, limit int) ([]*persistence.BulkOperation, error)
	ChangeEventHead(ctx context.Context) (persistence.EventCursor, error)
	ChangeEventList(ctx context.Context, p persistence.ChangeEventListParams) ([]*persistence.ChangeEvent, error)
	ChangeEventOldest(ctx context.Context) (persistence.EventCursor, bool, error)
	CountByWorkflow(ctx context.Context, table string, ids []int64) (map[int64]int, error)
	DefinitionGet(ctx context.Context, p persistence.DefinitionGetParams) (*persistence.Definition, error)
	DefinitionGetByIDs(ctx context.Context, ids []int64) ([]*persistence.Definition, error)
	DefinitionGetMany(ctx context.Context, keys []persistence.DefinitionKey) ([]*persistence.Definition, error)
	DefinitionList(ctx context.Context, p persistence.DefinitionListParams) ([]*persistence.Definition, error)
	ExecutorGetMany(ctx context.Context, ids []int64) ([]*persistence.Executor, error)
	ExecutorPage(ctx context.Context, p persistence.ExecutorPageParams) ([]*persistence.Executor, error)
	FormSubmissionList(ctx context.Context, workflowIDs ...int64) ([]*persistence.FormSubmission, error)
	RerunLinks(ctx context.Context, ids []int64, originals bool) ([]*persistence.WorkflowRerun, error)
	SchedulePage(ctx context.Context, p persistence.SchedulePageParams) ([]*persistence.Schedule, error)
	SideEffectGetMany(ctx context.Context, ids []int64) ([]*persistence.SideEffect, error)
	SideEffectList(ctx context.Context, workflowIDs []int64) ([]*persistence.SideEffect, error)
	SignalList(ctx context.Context, workflowIDs []int64) ([]*persistence.Signal, error)
	TaskInstanceGetMany(ctx context.Context, ids []int64) ([]*persistence.TaskInstance, error)
	TaskInstanceList(ctx context.Context, p persistence.TaskInstanceListParams) ([]*persistence.TaskInstance, error)
	VariablesAsOf(ctx context.Context, workflowID, actionID int64) (map[string]json.RawMessage, error)
	AttributeKinds(ctx context.Context, names []string) (map[string]persistence.AttributeKind, error)
	WorkflowAttributeMaps(ctx context.Context, workflowIDs []int64) (map[int64]map[string]persistence.AttributeValue, error)
	PendingRemoteFunctions(ctx context.Context, workflowIDs []int64) (map[int64][]string, error)
	StuckRulesAt(ctx context.Context, p persistence.StuckRulesParams) (*persistence.StuckRules, error)
	WorkflowTraceparents(ctx context.Context, workflowIDs []int64) (map[int64]string, error)
	WorkflowCountUpTo(ctx context.Context, f persistence.WorkflowFilter, exactUpTo int) (persistence.Count, error)
	WorkflowDataGetMany(ctx context.Context, ids []int64) ([]*persistence.WorkflowData, error)
	WorkflowGet(ctx context.Context, id int64) (*persistence.Workflow, error)
	WorkflowGetMany(ctx context.Context, ids []int64) ([]*persistence.Workflow, error)
	WorkflowGetManyWithoutData(ctx context.Context, ids []int64) ([]*persistence.Workflow, error)
	WorkflowHeldBy(ctx context.Context, executorIDs []int64) ([]*persistence.Workflow, error)
	WorkflowList(ctx context.Context, p persistence.WorkflowListParams) ([]*persistence.Workflow, bool, error)
	WorkflowStatsByTypeUpTo(ctx context.Context, f persistence.WorkflowFilter, exactUpTo int) ([]persistence.TypeStatCounts, error)
	WorkflowStatsUpTo(ctx context.Context, f persistence.WorkflowFilter, exactUpTo int) (persistence.WorkflowStatCounts, error)
}

var _ Reads = (*persistence.Store)(nil)
