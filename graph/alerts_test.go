package graph_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairnflow/cairn/graph"
	"github.com/cairnflow/cairn/graph/server"
	"github.com/cairnflow/cairn/internal/serverless"
	"github.com/cairnflow/cairn/persistence"
	"github.com/cairnflow/cairn/persistence/dbtest"
)

// Alert rules through the API: made and deleted by an admin with audit entries, refused to a
// reader, bad input refused with its field and nothing changed; a workflow cancelled under a rule
// has a pending delivery listed by alertDeliveries and its filters.
func TestAlertRulesThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, store *persistence.Store) {
		ctx := context.Background()
		require.NoError(t, store.APITokenInsert(ctx, &persistence.APIToken{Name: "ops", Hash: persistence.HashToken("admin-secret"), Role: graph.RoleAdmin}))
		require.NoError(t, store.APITokenInsert(ctx, &persistence.APIToken{Name: "viewer", Hash: persistence.HashToken("reader-secret"), Role: graph.RoleReader}))
		b := setup(t, store, func(c *server.Config) { c.Authenticate = server.StoreAuthenticator(store) })
		b.engine.SetWebhookCheck(serverless.HTTPOptions{}.CheckURL)
		const admin, reader = "Bearer admin-secret", "Bearer reader-secret"
		create := `mutation { createAlertRule(input: {name: "failures", types: ["test.flow"], statuses: [FAILED, CANCELLED], webhookUrl: "https://hooks.example.com/cairn"}) { alertRule { id name types statuses webhookUrl created } } }`

		_, resp := postAs(t, b, reader, create)
		require.NotEmpty(t, resp.Errors)
		require.Equal(t, "FORBIDDEN", resp.Errors[0].Extensions["code"])

		for _, bad := range []string{
			`mutation { createAlertRule(input: {name: "x", statuses: [FAILED], webhookUrl: "file:///etc/passwd"}) { alertRule { id } } }`,
			`mutation { createAlertRule(input: {name: "x", statuses: [FAILED], webhookUrl: "http://169.254.169.254/latest"}) { alertRule { id } } }`,
			`mutation { createAlertRule(input: {name: "x", statuses: [FAILED], webhookUrl: "http://127.0.0.1:8080/"}) { alertRule { id } } }`,
		} {
			_, resp := postAs(t, b, admin, bad)
			require.NotEmpty(t, resp.Errors, bad)
			require.Equal(t, "INVALID_INPUT", resp.Errors[0].Extensions["code"], bad)
			require.Equal(t, "webhookUrl", resp.Errors[0].Extensions["field"], bad)
		}
		_, resp = postAs(t, b, admin, `mutation { createAlertRule(input: {name: "x", statuses: [], webhookUrl: "https://hooks.example.com/"}) { alertRule { id } } }`)
		require.Equal(t, "statuses", resp.Errors[0].Extensions["field"])
		rules, err := store.AlertRuleList(ctx)
		require.NoError(t, err)
		require.Empty(t, rules, "bad input changes nothing")

		_, resp = postAs(t, b, admin, create)
		require.Empty(t, resp.Errors)
		var made struct {
			CreateAlertRule struct {
				AlertRule struct {
					ID, Name, WebhookURL, Created string
					Types, Statuses               []string
				}
			}
		}
		require.NoError(t, json.Unmarshal(resp.Data, &made))
		rule := made.CreateAlertRule.AlertRule
		require.Equal(t, "failures", rule.Name)
		require.Equal(t, []string{"test.flow"}, rule.Types)
		require.Equal(t, []string{"FAILED", "CANCELLED"}, rule.Statuses)
		_, resp = postAs(t, b, admin, create)
		require.Equal(t, "CONFLICT", resp.Errors[0].Extensions["code"])

		_, resp = postAs(t, b, admin, `mutation { startWorkflow(input: {type: "test.flow"}) { workflow { id } } }`)
		require.Empty(t, resp.Errors)
		var started struct {
			StartWorkflow struct{ Workflow struct{ ID string } }
		}
		require.NoError(t, json.Unmarshal(resp.Data, &started))
		id := started.StartWorkflow.Workflow.ID
		_, resp = postAs(t, b, admin, `mutation { cancelWorkflow(input: {id: "`+id+`"}) { workflow { id } } }`)
		require.Empty(t, resp.Errors)
		var page struct {
			AlertDeliveries struct {
				Items []struct {
					RuleID, RuleName, WorkflowStatus, Status, State string
					Attempts                                        int
					Workflow                                        struct{ ID string }
				}
				HasNextPage bool
			}
		}
		_, resp = postAs(t, b, reader, `{ alertDeliveries(first: 10, filter: {ruleId: "`+rule.ID+`", workflowId: "`+id+`", status: PENDING}) { items { ruleId ruleName workflowStatus status state attempts workflow { id } } hasNextPage } }`)
		require.Empty(t, resp.Errors)
		require.NoError(t, json.Unmarshal(resp.Data, &page))
		require.Len(t, page.AlertDeliveries.Items, 1)
		d := page.AlertDeliveries.Items[0]
		require.Equal(t, rule.ID, d.RuleID)
		require.Equal(t, "CANCELLED", d.WorkflowStatus)
		require.Equal(t, "PENDING", d.Status)
		require.Equal(t, id, d.Workflow.ID)
		_, resp = postAs(t, b, reader, `{ alertDeliveries(filter: {status: DELIVERED}) { items { status } } }`)
		require.Empty(t, resp.Errors)
		require.JSONEq(t, `{"alertDeliveries":{"items":[]}}`, string(resp.Data))

		_, resp = postAs(t, b, admin, `mutation { deleteAlertRule(input: {id: "`+rule.ID+`"}) { deleted } }`)
		require.Empty(t, resp.Errors)
		require.JSONEq(t, `{"deleteAlertRule":{"deleted":true}}`, string(resp.Data))
		_, resp = postAs(t, b, admin, `mutation { deleteAlertRule(input: {id: "`+rule.ID+`"}) { deleted } }`)
		require.Equal(t, "NOT_FOUND", resp.Errors[0].Extensions["code"])
		// A rule's webhook URL may carry a secret: only an admin lists the rules.
		_, resp = postAs(t, b, reader, `{ alertRules { id webhookUrl } }`)
		require.Len(t, resp.Errors, 1)
		require.Equal(t, "FORBIDDEN", resp.Errors[0].Extensions["code"])
		_, resp = postAs(t, b, admin, `{ alertRules { id } auditLog(first: 5) { items { actor action } } }`)
		require.Empty(t, resp.Errors)
		require.JSONEq(t, `{"alertRules":[],"auditLog":{"items":[{"actor":"ops","action":"deleteAlertRule"},{"actor":"ops","action":"createAlertRule"}]}}`, string(resp.Data))
	})
}
