package graph

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/cairnflow/cairn/graph/model"
	"github.com/cairnflow/cairn/persistence"
)

// auditSubject turns an audit entry's subject into what clients know: "Kind:row" becomes the
// object's opaque ID, a name stays as it is.
func auditSubject(s *string) *string {
	if s == nil {
		return nil
	}
	kind, num, ok := strings.Cut(*s, ":")
	id, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil || id <= 0 {
		return s
	}
	out := encodeID(kind, id)
	return &out
}

// auditLog returns a page of the audit log, newest first; the cursor is the last entry's ID.
func (r *Resolver) auditLog(ctx context.Context, first *int, after *string, filter *model.AuditLogFilter) (*model.AuditLogPage, error) {
	read, before, err := newestFirstArgs(first, after, kindAudit)
	if err != nil {
		return nil, err
	}
	p := persistence.AuditListParams{Limit: read, BeforeID: before}
	if filter != nil {
		p.Actor, p.Since, p.Until = filter.Actor, filter.Since, filter.Until
	}
	rows, err := r.store.AuditList(ctx, p)
	if err != nil {
		return nil, err
	}
	out := &model.AuditLogPage{}
	out.Items, out.HasNextPage, out.EndCursor = newestFirstPage(rows, read, kindAudit, func(e *persistence.AuditEntry) int64 { return e.ID })
	return out, nil
}

// rerunOf returns the workflow w reruns, nil when none (or when it is gone).
func (r *Resolver) rerunOf(ctx context.Context, w *persistence.Workflow) (*persistence.Workflow, error) {
	links, err := r.store.RerunLinks(ctx, []int64{w.ID}, false)
	if err != nil || len(links) == 0 {
		return nil, err
	}
	orig, err := loadersFor(ctx, r.store).workflows.Load(ctx, links[0].RerunOf)()
	if errors.Is(err, persistence.ErrNotFound) {
		return nil, nil
	}
	return orig, err
}

// reruns returns the workflows started as reruns of w, oldest first.
func (r *Resolver) reruns(ctx context.Context, w *persistence.Workflow) ([]*persistence.Workflow, error) {
	links, err := r.store.RerunLinks(ctx, []int64{w.ID}, true)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(links))
	for i, l := range links {
		ids[i] = l.WorkflowID
	}
	out := []*persistence.Workflow{}
	if len(ids) == 0 {
		return out, nil
	}
	wfs, err := r.store.WorkflowGetManyWithoutData(ctx, ids)
	if err != nil {
		return nil, err
	}
	return append(out, wfs...), nil
}

// audit records an operator act done through the API in the audit log, once it has committed: a
// failure to record it is logged (the act stands).
func (r *Resolver) audit(ctx context.Context, action, subject string, details any) {
	if err := r.engine.Audit(context.WithoutCancel(ctx), actorOf(ctx), action, subject, "", details); err != nil {
		r.log.ErrorContext(ctx, "error writing the audit log", "action", action, "error", err)
	}
}

func scheduleSubject(id int64) string { return "Schedule:" + strconv.FormatInt(id, 10) }
