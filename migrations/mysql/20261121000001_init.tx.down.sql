DROP TABLE IF EXISTS api_tokens, change_event_commits, change_events, idempotency_keys, schedules, form_submissions,
    signals, activity_logs, side_effects, action_variables, actions, task_instances, workflows, executors,
    workflow_definitions;
