export type Maybe<T> = T | null;
export type InputMaybe<T> = Maybe<T>;
export type Exact<T extends {
    [key: string]: unknown;
}> = {
    [K in keyof T]: T[K];
};
export type MakeOptional<T, K extends keyof T> = Omit<T, K> & {
    [SubKey in K]?: Maybe<T[SubKey]>;
};
export type MakeMaybe<T, K extends keyof T> = Omit<T, K> & {
    [SubKey in K]: Maybe<T[SubKey]>;
};
export type MakeEmpty<T extends {
    [key: string]: unknown;
}, K extends keyof T> = {
    [_ in K]?: never;
};
export type Incremental<T> = T | {
    [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never;
};
/** All built-in and custom scalars, mapped to their actual values */
export type Scalars = {
    ID: {
        input: string;
        output: string;
    };
    String: {
        input: string;
        output: string;
    };
    Boolean: {
        input: boolean;
        output: boolean;
    };
    Int: {
        input: number;
        output: number;
    };
    Float: {
        input: number;
        output: number;
    };
    /** Any JSON value. Fields documented as "a JSON object" always hold an object. */
    JSON: {
        input: unknown;
        output: unknown;
    };
    /** A point in time, in RFC 3339 format with nanoseconds, always UTC (for example 2026-01-02T03:04:05.123456Z). */
    Time: {
        input: string;
        output: string;
    };
};
/** One row of a workflow's history: one change of its state. */
export type Action = Node & {
    __typename?: 'Action';
    /** Who made an external change. */
    actor?: Maybe<Scalars['String']['output']>;
    /** When it happened. */
    at: Scalars['Time']['output'];
    /** The executor whose step made the change. */
    executor?: Maybe<Executor>;
    /** The state before. */
    fromState?: Maybe<Scalars['String']['output']>;
    /** The action's opaque ID. */
    id: Scalars['ID']['output'];
    /** The retry count at the change. */
    retryNo: Scalars['Int']['output'];
    /** The state after. */
    state: Scalars['String']['output'];
    /** A note on the change. */
    stateText?: Maybe<Scalars['String']['output']>;
    /** The execution attempt that caused it. */
    taskInstance?: Maybe<TaskInstance>;
    /** Why it was written. */
    type: ActionType;
    /** The variables it set (a null value: removed). */
    variableChanges: Array<VariableChange>;
    /** The workflow's variables right after this action (a JSON object). */
    variablesAfter: Scalars['JSON']['output'];
    /** The workflow it changed. */
    workflow: Workflow;
};
/** A page of a workflow's actions, oldest first. */
export type ActionConnection = {
    __typename?: 'ActionConnection';
    /** The actions with their cursors. */
    edges: Array<ActionEdge>;
    /** The actions. */
    nodes: Array<Action>;
    /** Where the page lies in the history. */
    pageInfo: PageInfo;
    /** How many actions the workflow has. */
    totalCount: Scalars['Int']['output'];
};
/** An action in a page. */
export type ActionEdge = {
    __typename?: 'ActionEdge';
    /** The action's position, for after/before. */
    cursor: Scalars['String']['output'];
    /** The action. */
    node: Action;
};
/** Why an action was written. */
export type ActionType = 
/** An operator or service changed the workflow (retry, pause, update...). */
'EXTERNAL_CHANGE'
/** A live executor took over the workflow from a dead one. */
 | 'RECOVERY'
/** A step ran and moved the workflow on. */
 | 'STATE_EXECUTION'
/** A step failed (it will be retried, or the workflow went to ERROR or MANUAL). */
 | 'STATE_EXECUTION_FAILED';
/** An entry a step logged. */
export type ActivityLog = {
    __typename?: 'ActivityLog';
    /** When it was logged. */
    at: Scalars['Time']['output'];
    /** The log entry's opaque ID. */
    id: Scalars['ID']['output'];
    /** Its name. */
    name: Scalars['String']['output'];
    /** The execution attempt that logged it. */
    taskInstance?: Maybe<TaskInstance>;
    /** Its value. */
    value: Scalars['String']['output'];
};
/** One workflow's status change POSTed to one rule's webhook, with its retries. */
export type AlertDelivery = {
    __typename?: 'AlertDelivery';
    /** The POSTs made so far. */
    attempts: Scalars['Int']['output'];
    /** When the status change was recorded. */
    created: Scalars['Time']['output'];
    /** When it was delivered or failed for good. */
    finished?: Maybe<Scalars['Time']['output']>;
    id: Scalars['ID']['output'];
    /** Why the last attempt failed (null after a success). */
    lastError?: Maybe<Scalars['String']['output']>;
    /** When the next attempt is due (PENDING), or was due last. */
    nextAttempt: Scalars['Time']['output'];
    /** The HTTP status the webhook last answered (null when none answered). */
    responseCode?: Maybe<Scalars['Int']['output']>;
    /** The rule's ID (the rule may have been deleted since). */
    ruleId: Scalars['ID']['output'];
    /** The rule's name when the delivery was recorded. */
    ruleName: Scalars['String']['output'];
    /** The state it was in. */
    state: Scalars['String']['output'];
    status: AlertDeliveryStatus;
    /** The workflow (null once deleted). */
    workflow?: Maybe<Workflow>;
    /** The status the workflow reached. */
    workflowStatus: WorkflowStatus;
};
/** Which deliveries. */
export type AlertDeliveryFilter = {
    /** Only this rule's. */
    ruleId?: InputMaybe<Scalars['ID']['input']>;
    status?: InputMaybe<AlertDeliveryStatus>;
    /** Only this workflow's. */
    workflowId?: InputMaybe<Scalars['ID']['input']>;
};
/** A page of deliveries, newest first. */
export type AlertDeliveryPage = {
    __typename?: 'AlertDeliveryPage';
    /** The cursor of the last item (for after). */
    endCursor?: Maybe<Scalars['String']['output']>;
    hasNextPage: Scalars['Boolean']['output'];
    items: Array<AlertDelivery>;
};
/** Where a delivery stands. */
export type AlertDeliveryStatus = 
/** The webhook answered 2xx. */
'DELIVERED'
/** Every attempt failed. */
 | 'FAILED'
/** Not delivered yet: to be tried (again) at nextAttempt. */
 | 'PENDING';
/** A rule: when a workflow of one of its types reaches one of its statuses, cairn POSTs it to the webhook. */
export type AlertRule = {
    __typename?: 'AlertRule';
    created: Scalars['Time']['output'];
    id: Scalars['ID']['output'];
    /** The rule's unique name (in each body it sends). */
    name: Scalars['String']['output'];
    /** The statuses it alerts on (FAILED for DolphinScheduler's failure warning, FINISHED for success, both for all). */
    statuses: Array<WorkflowStatus>;
    /** The workflow types it alerts on; empty: every type. */
    types: Array<Scalars['String']['output']>;
    /** Where it POSTs: an http(s) URL HTTP calls may reach. */
    webhookUrl: Scalars['String']['output'];
};
/** An API token (never its secret). */
export type ApiToken = {
    __typename?: 'ApiToken';
    /** When it was made. */
    created: Scalars['Time']['output'];
    /** When it stops being accepted; null: never. */
    expiresAt?: Maybe<Scalars['Time']['output']>;
    /** The remote functions a WORKER token serves (empty for other roles). */
    functions: Array<Scalars['String']['output']>;
    /** When it was last used (recorded at most once a minute). */
    lastUsed?: Maybe<Scalars['Time']['output']>;
    /** Its unique name: the actor of what it does, in the audit log. */
    name: Scalars['String']['output'];
    /** What it may do. */
    role: Role;
};
/**
 * A condition on one search attribute: exactly one of eq, in, gt, gte, lt, lte or prefix. Values are
 * JSON scalars of the attribute's kind (a time as an RFC 3339 string); a comparison the kind does not
 * allow (gt on a boolean, prefix on a number, a number against a string attribute) is INVALID_INPUT. A
 * name never used matches no workflow.
 */
export type AttributeFilter = {
    /** Equal to this value. */
    eq?: InputMaybe<Scalars['JSON']['input']>;
    /** Greater than this value (strings compare byte by byte). */
    gt?: InputMaybe<Scalars['JSON']['input']>;
    /** Greater than or equal to this value. */
    gte?: InputMaybe<Scalars['JSON']['input']>;
    /** Equal to one of these values (1 to 100). */
    in?: InputMaybe<Array<Scalars['JSON']['input']>>;
    /** Less than this value. */
    lt?: InputMaybe<Scalars['JSON']['input']>;
    /** Less than or equal to this value. */
    lte?: InputMaybe<Scalars['JSON']['input']>;
    /** The attribute. */
    name: Scalars['String']['input'];
    /** A string attribute that begins with this. */
    prefix?: InputMaybe<Scalars['String']['input']>;
};
/**
 * An operator act in the audit log: bulk operations, deletes, reruns, deploys and release states,
 * schedule changes, tokens made and revoked. (A change of one workflow is also an action in its own
 * history, with its actor and reason.)
 */
export type AuditEntry = {
    __typename?: 'AuditEntry';
    /** What: the mutation's name (startBulkOperation, deleteWorkflow, deployDefinition...) or the command's (tokenCreate, tokenRevoke). */
    action: Scalars['String']['output'];
    /** Who: the API token's name, cli for the command line, anonymous when the server does not authenticate. */
    actor: Scalars['String']['output'];
    at: Scalars['Time']['output'];
    /** More about the act (JSON), such as a bulk operation's filter and count. */
    details?: Maybe<Scalars['JSON']['output']>;
    id: Scalars['ID']['output'];
    reason?: Maybe<Scalars['String']['output']>;
    /** What it acted on: an object's ID, or a name (a definition type, a token). */
    subject?: Maybe<Scalars['String']['output']>;
};
/** Which audit entries. */
export type AuditLogFilter = {
    /** Only this actor's acts. */
    actor?: InputMaybe<Scalars['String']['input']>;
    /** Only those at or after this time. */
    since?: InputMaybe<Scalars['Time']['input']>;
    /** Only those before this time. */
    until?: InputMaybe<Scalars['Time']['input']>;
};
/** A page of the audit log, newest first. */
export type AuditLogPage = {
    __typename?: 'AuditLogPage';
    /** The cursor of the last item (for after). */
    endCursor?: Maybe<Scalars['String']['output']>;
    hasNextPage: Scalars['Boolean']['output'];
    items: Array<AuditEntry>;
};
/** A past range of a schedule's fire times to start the runs of. */
export type BackfillScheduleInput = {
    /** The first fire time considered (inclusive). */
    from: Scalars['Time']['input'];
    /** The schedule. */
    id: Scalars['ID']['input'];
    /** The last fire time considered (inclusive). */
    to: Scalars['Time']['input'];
};
/** The runs of a backfill. */
export type BackfillSchedulePayload = {
    __typename?: 'BackfillSchedulePayload';
    /** How many of them this call started. */
    created: Scalars['Int']['output'];
    /** One run per fire time in the range, oldest first (existing ones included). */
    workflows: Array<Workflow>;
};
/** What a bulk operation does to each of its workflows: the single operation of the same name. */
export type BulkAction = 
/** cancelWorkflow. */
'CANCEL'
/** deleteWorkflow: an ended workflow with its history and children. */
 | 'DELETE'
/** pauseWorkflow. */
 | 'PAUSE'
/** resumeWorkflow. */
 | 'RESUME'
/** retryWorkflow (from input.state, or the state that failed). */
 | 'RETRY'
/** signalWorkflow with input.signal. */
 | 'SIGNAL';
/**
 * An operator's action on every workflow a filter matched when the operation started (a workflow that
 * matches later is not touched). Any node carries it out in batches; when that node dies another one
 * carries on, and no workflow is changed twice (each workflow's row in the operation is marked in the
 * transaction that changes it). Each change is the single operation's, with its action (actor and
 * reason) and change event.
 */
export type BulkOperation = {
    __typename?: 'BulkOperation';
    action: BulkAction;
    /** Who started it: the API token's name, or anonymous when the server does not authenticate. */
    actor: Scalars['String']['output'];
    created: Scalars['Time']['output'];
    /** Only counted: nothing was changed. */
    dryRun: Scalars['Boolean']['output'];
    failed: Scalars['Int']['output'];
    /** The workflows it could not change, with why, in workflow order. */
    failures: BulkOperationFailurePage;
    /** The filter, as given. */
    filter: Scalars['JSON']['output'];
    finished?: Maybe<Scalars['Time']['output']>;
    id: Scalars['ID']['output'];
    modified: Scalars['Time']['output'];
    /** How many it handled so far: succeeded + failed. */
    processed: Scalars['Int']['output'];
    reason?: Maybe<Scalars['String']['output']>;
    /** The state a RETRY runs again (null: the state that failed). */
    state?: Maybe<Scalars['String']['output']>;
    status: BulkOperationStatus;
    succeeded: Scalars['Int']['output'];
    /** How many workflows the filter matched when the operation started. */
    total: Scalars['Int']['output'];
    /** How many of them the action applies to by their status then (what a dry run answers). */
    wouldChange: Scalars['Int']['output'];
};
/**
 * An operator's action on every workflow a filter matched when the operation started (a workflow that
 * matches later is not touched). Any node carries it out in batches; when that node dies another one
 * carries on, and no workflow is changed twice (each workflow's row in the operation is marked in the
 * transaction that changes it). Each change is the single operation's, with its action (actor and
 * reason) and change event.
 */
export type BulkOperationFailuresArgs = {
    after?: InputMaybe<Scalars['String']['input']>;
    first?: InputMaybe<Scalars['Int']['input']>;
};
/** A workflow a bulk operation could not change. */
export type BulkOperationFailure = {
    __typename?: 'BulkOperationFailure';
    /** The error code the single operation gave (CONFLICT, NOT_FOUND, INVALID_INPUT...). */
    code: Scalars['String']['output'];
    message: Scalars['String']['output'];
    /** The workflow; null when it is gone since. */
    workflow?: Maybe<Workflow>;
    /** The workflow's ID. */
    workflowId: Scalars['ID']['output'];
};
/** A page of a bulk operation's failures. */
export type BulkOperationFailurePage = {
    __typename?: 'BulkOperationFailurePage';
    /** The cursor of the last item (for after). */
    endCursor?: Maybe<Scalars['String']['output']>;
    hasNextPage: Scalars['Boolean']['output'];
    items: Array<BulkOperationFailure>;
};
export type BulkOperationPayload = {
    __typename?: 'BulkOperationPayload';
    bulkOperation: BulkOperation;
};
/** Where a bulk operation is. */
export type BulkOperationStatus = 
/** Cancelled by cancelBulkOperation: the workflows it had not reached were left alone. */
'CANCELLED'
/** Every workflow it handled failed. */
 | 'FAILED'
/** Stored; no node has taken it up yet. */
 | 'PENDING'
/** A node works through its workflows. */
 | 'RUNNING'
/** Every workflow was handled (some may have failed; see failed and failures). A dry run is SUCCEEDED at once. */
 | 'SUCCEEDED';
/** The signal a SIGNAL bulk operation delivers to each workflow. */
export type BulkSignalInput = {
    name: Scalars['String']['input'];
    payload?: InputMaybe<Scalars['JSON']['input']>;
};
export type CancelBulkOperationInput = {
    id: Scalars['ID']['input'];
};
export type ClearFlowControlInput = {
    type: Scalars['String']['input'];
};
export type CompleteTaskInput = {
    /** The function's result (any JSON value; null when absent). */
    output?: InputMaybe<Scalars['JSON']['input']>;
    token: Scalars['String']['input'];
};
export type CompleteTasksInput = {
    /** The results, each a task's token and output (1 to 500). */
    results: Array<CompleteTaskInput>;
};
export type CompleteTasksPayload = {
    __typename?: 'CompleteTasksPayload';
    /** One item per result, in the order of the input. */
    results: Array<CompletedTask>;
};
export type CompletedTask = {
    __typename?: 'CompletedTask';
    /** CONFLICT when the token no longer holds its task (the lease ran out, or the task ended): nothing was written for it. Null when written. */
    code?: Maybe<Scalars['String']['output']>;
    /** The task's opaque ID. */
    id: Scalars['ID']['output'];
    /** SUCCEEDED once the result is written; null when it was not (see code). */
    status?: Maybe<Scalars['String']['output']>;
};
/** A concurrency limit. */
export type Concurrency = {
    __typename?: 'Concurrency';
    /** The jq expression over a workflow's input giving its key (when its start gave none). */
    key?: Maybe<Scalars['String']['output']>;
    /** Slots per key. */
    limit: Scalars['Int']['output'];
    scope: ConcurrencyScope;
    strategy: ConcurrencyStrategy;
};
export type ConcurrencyInput = {
    /** A jq expression over the input giving a workflow's key. */
    key?: InputMaybe<Scalars['String']['input']>;
    /** Slots per key (at least 1). */
    limit: Scalars['Int']['input'];
    scope?: InputMaybe<ConcurrencyScope>;
    strategy?: InputMaybe<ConcurrencyStrategy>;
};
/** How long a workflow holds its concurrency key's slot. */
export type ConcurrencyScope = 
/** Only while one of its steps runs (a remote task included). */
'STEP'
/** From its first claim until it ends (FINISHED, FAILED, CANCELLED, MANUAL) or is paused. */
 | 'WORKFLOW';
/** What happens to a workflow whose key has no free slot. */
export type ConcurrencyStrategy = 
/** The key's oldest holder is cancelled for it. */
'CANCEL_IN_PROGRESS'
/** A workflow that never ran is cancelled, with the reason. */
 | 'CANCEL_NEWEST'
/** It waits, oldest first. */
 | 'QUEUE';
export type CreateAlertRuleInput = {
    /** A unique name, 1 to 200 characters. */
    name: Scalars['String']['input'];
    /** The statuses to alert on (at least one). */
    statuses: Array<WorkflowStatus>;
    /** The workflow types to alert on; empty or null: every type. */
    types?: InputMaybe<Array<Scalars['String']['input']>>;
    /** An http(s) URL that HTTP calls may reach (not a private, loopback or reserved address unless its host is allowed by name). */
    webhookUrl: Scalars['String']['input'];
};
export type CreateAlertRulePayload = {
    __typename?: 'CreateAlertRulePayload';
    alertRule: AlertRule;
};
/** A schedule made to start workflows on a cron expression. */
export type CreateScheduleInput = {
    /** An alert rule the schedule's runs alert through (on the rule's statuses, whatever its types), besides the rules that match them. */
    alertRuleId?: InputMaybe<Scalars['ID']['input']>;
    /** A cron expression: five fields (minute hour day month weekday) or a descriptor (@hourly, @every 15m). */
    cron: Scalars['String']['input'];
    /** No fire after this time. */
    endAt?: InputMaybe<Scalars['Time']['input']>;
    /** The input of every run (a JSON object). */
    input?: InputMaybe<Scalars['JSON']['input']>;
    /** A unique name to find the schedule by (schedule(name:)); none when null. Taken: CONFLICT on name. */
    name?: InputMaybe<Scalars['String']['input']>;
    /** SKIP (default) or ALLOW. */
    overlapPolicy?: InputMaybe<ScheduleOverlapPolicy>;
    /** The priority of every run. */
    priority?: InputMaybe<Scalars['Int']['input']>;
    /** No fire before this time. */
    startAt?: InputMaybe<Scalars['Time']['input']>;
    /** The IANA time zone to read it in (UTC when null). */
    timezone?: InputMaybe<Scalars['String']['input']>;
    /** The workflow type to start. */
    type: Scalars['String']['input'];
};
/** A token to make. */
export type CreateTokenInput = {
    /** When it stops being accepted (in the future); never when null. */
    expiresAt?: InputMaybe<Scalars['Time']['input']>;
    /** For WORKER: the remote functions it serves (required); for other roles, none. */
    functions?: InputMaybe<Array<Scalars['String']['input']>>;
    /** Its unique name (CONFLICT when taken, also by a revoked token). */
    name: Scalars['String']['input'];
    /** What it may do. */
    role: Role;
};
/** The result of createToken. */
export type CreateTokenPayload = {
    __typename?: 'CreateTokenPayload';
    /** Its secret, to send as Authorization: Bearer <secret>: shown this once, only its hash is stored. */
    secret: Scalars['String']['output'];
    /** The token made. */
    token: ApiToken;
};
/** Folds a burst of starts into one workflow. */
export type DebounceInput = {
    /** Starts with the same key (and type) fold into one workflow while it has not run. */
    key: Scalars['String']['input'];
    /** How long after the last start the workflow runs: 1s, 1m or PT1S. */
    period: Scalars['String']['input'];
};
export type DeleteAlertRuleInput = {
    id: Scalars['ID']['input'];
};
export type DeleteAlertRulePayload = {
    __typename?: 'DeleteAlertRulePayload';
    /** True: the rule is gone (deliveries already recorded are still sent). */
    deleted: Scalars['Boolean']['output'];
};
/** A schedule to delete. */
export type DeleteScheduleInput = {
    /** The schedule. */
    id: Scalars['ID']['input'];
};
/** The result of deleteSchedule. */
export type DeleteSchedulePayload = {
    __typename?: 'DeleteSchedulePayload';
    /** True: the schedule is gone (the workflows it started stay). */
    deleted: Scalars['Boolean']['output'];
};
export type DeleteWorkflowInput = {
    id: Scalars['ID']['input'];
    /** Why: recorded in the audit log. */
    reason?: InputMaybe<Scalars['String']['input']>;
};
export type DeleteWorkflowPayload = {
    __typename?: 'DeleteWorkflowPayload';
    deleted: Scalars['Boolean']['output'];
    /** The ID of the workflow deleted. */
    id: Scalars['ID']['output'];
};
/** The input of deployDefinition. */
export type DeployDefinitionInput = {
    /** The document, YAML or JSON (at most 1 MiB). */
    source: Scalars['String']['input'];
};
/** The outcome of deployDefinition. */
export type DeployDefinitionPayload = {
    __typename?: 'DeployDefinitionPayload';
    /** False when the document was unchanged since a stored version, which is returned. */
    created: Scalars['Boolean']['output'];
    /** The stored version: a new one, or the unchanged one already stored. */
    definition: WorkflowDefinition;
};
/** A running (or stopped, or dead) node's worker pool. */
export type Executor = Node & {
    __typename?: 'Executor';
    /** Its last heartbeat. */
    active: Scalars['Time']['output'];
    /** Whether it has not stopped and its heartbeat has not expired. */
    alive: Scalars['Boolean']['output'];
    /** When it counts as dead without a new heartbeat. */
    expires: Scalars['Time']['output'];
    /** The executor group it serves. */
    group: Scalars['String']['output'];
    /** Its host name. */
    host: Scalars['String']['output'];
    /** The executor's opaque ID. */
    id: Scalars['ID']['output'];
    /** Its process ID. */
    pid: Scalars['Int']['output'];
    /** When it started. */
    started: Scalars['Time']['output'];
    /** When it stopped (or was declared dead). */
    stopped?: Maybe<Scalars['Time']['output']>;
    /**
     * The definition types its pool claims, as its last claim named them (null: not recorded yet, as
     * for a node that has not claimed since it started).
     */
    types?: Maybe<Array<Scalars['String']['output']>>;
    /** The workflows it holds now (EXECUTING). */
    workflows: Array<Workflow>;
};
export type FailTaskInput = {
    error: TaskErrorInput;
    /** Whether running the task again may help (default false). */
    retryable?: InputMaybe<Scalars['Boolean']['input']>;
    token: Scalars['String']['input'];
};
/** A type's flow control in force. */
export type FlowControl = {
    __typename?: 'FlowControl';
    concurrency?: Maybe<Concurrency>;
    /** Per key, how many run and how many wait (keys with neither are left out). */
    keys: Array<FlowKeyCount>;
    rateLimit?: Maybe<RateLimit>;
    source: FlowControlSource;
    type: Scalars['String']['output'];
};
/** The outcome of setFlowControl and clearFlowControl. */
export type FlowControlPayload = {
    __typename?: 'FlowControlPayload';
    /** The type's flow control now in force (null: none). */
    flowControl?: Maybe<FlowControl>;
};
/** Where a type's flow control comes from: a run-time one wins over the definition's. */
export type FlowControlSource = 'DEFINITION' | 'RUNTIME';
/** How many workflows of one concurrency key hold a slot and how many wait for one. */
export type FlowKeyCount = {
    __typename?: 'FlowKeyCount';
    /** The key (null: workflows without one). */
    key?: Maybe<Scalars['String']['output']>;
    running: Scalars['Int']['output'];
    waiting: Scalars['Int']['output'];
};
/** The data a person submitted for a user task (a WAIT or MANUAL state with a form schema). */
export type FormSubmission = {
    __typename?: 'FormSubmission';
    /** When it was submitted. */
    created: Scalars['Time']['output'];
    /** What was filled in (a JSON object). */
    data: Scalars['JSON']['output'];
    /** The submission's opaque ID. */
    id: Scalars['ID']['output'];
    /** The signature sent with it. */
    signature?: Maybe<Scalars['String']['output']>;
    /** The state whose form it filled in. */
    state: Scalars['String']['output'];
    /** Who submitted it. */
    submittedBy: Scalars['String']['output'];
};
export type HeartbeatTaskInput = {
    token: Scalars['String']['input'];
};
export type HeartbeatTaskPayload = {
    __typename?: 'HeartbeatTaskPayload';
    /** The lease's new deadline. */
    deadline: Scalars['Time']['output'];
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type Mutation = {
    __typename?: 'Mutation';
    /**
     * Starts the runs a schedule would have started for its fire times from..to (at most 1000), each
     * with the idempotency key of a live fire at that time: a time that already has its run starts
     * nothing again.
     */
    backfillSchedule: BackfillSchedulePayload;
    /** Stops a bulk operation: the workflows it has not reached are left alone. CONFLICT when it has ended. */
    cancelBulkOperation: BulkOperationPayload;
    /** End a workflow that has not ended; a step running for it is cancelled. */
    cancelWorkflow: WorkflowPayload;
    /** Remove a type's run-time flow control (the definition's, if any, applies again). */
    clearFlowControl: FlowControlPayload;
    /**
     * Ends a task with its output (a JSON value of at most 512 KiB; beyond it INVALID_INPUT, and the
     * task stays leased). A token that no longer holds the task is CONFLICT and changes nothing.
     */
    completeTask: TaskPayload;
    /**
     * Ends many tasks with their outputs in one request (1 to 500 results), written in one transaction.
     * Input is checked as completeTask checks it, all of it before anything is written: one bad
     * result (INVALID_INPUT naming it, as results[2].output; FORBIDDEN for another function's task)
     * refuses the whole call, and every task stays leased. Tokens are fenced one by one: a result
     * whose token no longer holds its task is answered CONFLICT in its own item and changes nothing,
     * and the others are written. The items answer the results in their order.
     */
    completeTasks: CompleteTasksPayload;
    /** Makes an alert rule (admin only), with an audit entry. */
    createAlertRule: CreateAlertRulePayload;
    /**
     * Starts workflows of a type on a cron expression (five fields, or @daily, @every 10m ...) in a time
     * zone, between optional start and end times. INVALID_INPUT names the field at fault.
     */
    createSchedule: SchedulePayload;
    /** Makes an API token and returns its secret once (ADMIN only). */
    createToken: CreateTokenPayload;
    /** Deletes an alert rule (admin only), with an audit entry. */
    deleteAlertRule: DeleteAlertRulePayload;
    /** Deletes a schedule (the workflows it started stay). */
    deleteSchedule: DeleteSchedulePayload;
    /**
     * Deletes an ended workflow with its history and its descendants. CONFLICT for one still running
     * (cancel it first), one with a descendant still running, or a child whose parent has not ended.
     */
    deleteWorkflow: DeleteWorkflowPayload;
    /**
     * Deploys a CNCF Serverless Workflow 1.0 document (YAML or JSON) as the definition of type
     * `<document.namespace>.<document.name>`: a changed document becomes a new version, an unchanged one
     * returns the stored version with created false. A document at fault (it does not parse, fails the
     * schema, names an unknown task, uses a task cairn does not run) is refused with INVALID_INPUT whose
     * extensions.field is the JSON pointer of the fault (`/do/2/fetch/call`), and nothing is stored.
     */
    deployDefinition: DeployDefinitionPayload;
    /**
     * Ends a task with an error (RFC 7807 problem details). A retryable failure runs the step again under
     * its retry policy; another fails it. A token that no longer holds the task is CONFLICT.
     */
    failTask: TaskPayload;
    /** Extends a lease by its leaseMs. A lost lease (it ran out, or the task ended) is CONFLICT. */
    heartbeatTask: HeartbeatTaskPayload;
    /** Stop a workflow from running until it is resumed. */
    pauseWorkflow: WorkflowPayload;
    /**
     * Leases up to max pending tasks of the functions for leaseMs, waiting up to waitMs for one to
     * arrive on any node (an empty list when none came). max 1 to 100 (default 1), leaseMs 1000 to
     * 3600000 (default 30000), waitMs 0 to 60000 (default 0); out of range is INVALID_INPUT naming the
     * field. A task whose lease runs out is offered again (a new token, attempt + 1).
     */
    pollTasks: PollTasksPayload;
    /**
     * Delivers a CloudEvent (an object with specversion, id, source and type) to every workflow that
     * waits for a signal named by its type (a Serverless Workflow listen task, or a WAIT state), as that
     * signal with the event as payload; at most 1000 workflows. A workflow not waiting yet does not get
     * it (signalWorkflow it by ID for that). The same event (source and id) published again reaches
     * each workflow once. INVALID_INPUT names the attribute at fault (event.type).
     */
    publishEvent: PublishEventPayload;
    /**
     * Starts a new workflow from an ended one: the same type and definition version (the newest with
     * latestVersion), business key and priority, with the same or a new input, from the start or a
     * named state; linked both ways (rerunOf, reruns). NOT_FOUND for an unknown id, CONFLICT for a
     * workflow that has not ended, INVALID_INPUT (field state) for a state it cannot start in.
     */
    rerunWorkflow: RerunWorkflowPayload;
    /** Let a PAUSED workflow run again. */
    resumeWorkflow: WorkflowPayload;
    /** Run a MANUAL or FAILED workflow again from a state (the one that failed by default), retries reset. */
    retryWorkflow: WorkflowPayload;
    /** Revokes an API token: it is refused from now on, on open streams too (ADMIN only). */
    revokeToken: RevokeTokenPayload;
    /** Put a definition type ONLINE or OFFLINE (an OFFLINE type starts no new workflow). */
    setDefinitionReleaseState: WorkflowDefinitionPayload;
    /** Set a type's flow control at run time: it wins over the definition's, on every node within about a second. */
    setFlowControl: FlowControlPayload;
    /** Pauses a schedule (it fires no more) or resumes it (from now on; missed fires are not made up). */
    setSchedulePaused: SchedulePayload;
    /** Deliver a signal; a workflow waiting for it wakes, one not waiting yet keeps it for later. */
    signalWorkflow: WorkflowPayload;
    /**
     * Starts a bulk operation (or, with dryRun, only counts). INVALID_INPUT names the field at fault: an
     * empty filter without all or dryRun, a state for another action than RETRY, a SIGNAL without a
     * signal name.
     */
    startBulkOperation: BulkOperationPayload;
    /**
     * Start a workflow of a registered, ONLINE type. Starting again with the same externalId (per type)
     * or the same idempotencyKey returns the workflow already started, with created false.
     */
    startWorkflow: StartWorkflowPayload;
    /** Start many workflows in one transaction: all of them or, when one input is invalid, none. */
    startWorkflows: StartWorkflowsPayload;
    /**
     * Submits the data a person filled in for the user task a workflow waits in: a WAIT state (the form
     * arrives as the signal it waits for) or a MANUAL state (the workflow moves on to the state's only next
     * state). The data must satisfy the state's form schema (JSON Schema) and is also set as the variable
     * named after the state. INVALID_INPUT (field data) when it does not; CONFLICT when the workflow does
     * not wait for a form.
     */
    submitForm: WorkflowPayload;
    /** Changes the given fields of a schedule, and computes its next fire again. */
    updateSchedule: SchedulePayload;
    /** An operator's change of a workflow's state, state text, schedule or variables. */
    updateWorkflow: WorkflowPayload;
    /** Make a scheduled or waiting workflow due now. */
    wakeUpWorkflow: WorkflowPayload;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationBackfillScheduleArgs = {
    input: BackfillScheduleInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationCancelBulkOperationArgs = {
    input: CancelBulkOperationInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationCancelWorkflowArgs = {
    input: WorkflowActionInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationClearFlowControlArgs = {
    input: ClearFlowControlInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationCompleteTaskArgs = {
    input: CompleteTaskInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationCompleteTasksArgs = {
    input: CompleteTasksInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationCreateAlertRuleArgs = {
    input: CreateAlertRuleInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationCreateScheduleArgs = {
    input: CreateScheduleInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationCreateTokenArgs = {
    input: CreateTokenInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationDeleteAlertRuleArgs = {
    input: DeleteAlertRuleInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationDeleteScheduleArgs = {
    input: DeleteScheduleInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationDeleteWorkflowArgs = {
    input: DeleteWorkflowInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationDeployDefinitionArgs = {
    input: DeployDefinitionInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationFailTaskArgs = {
    input: FailTaskInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationHeartbeatTaskArgs = {
    input: HeartbeatTaskInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationPauseWorkflowArgs = {
    input: WorkflowActionInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationPollTasksArgs = {
    input: PollTasksInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationPublishEventArgs = {
    input: PublishEventInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationRerunWorkflowArgs = {
    input: RerunWorkflowInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationResumeWorkflowArgs = {
    input: WorkflowActionInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationRetryWorkflowArgs = {
    input: RetryWorkflowInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationRevokeTokenArgs = {
    input: RevokeTokenInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationSetDefinitionReleaseStateArgs = {
    input: SetDefinitionReleaseStateInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationSetFlowControlArgs = {
    input: SetFlowControlInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationSetSchedulePausedArgs = {
    input: SetSchedulePausedInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationSignalWorkflowArgs = {
    input: SignalWorkflowInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationStartBulkOperationArgs = {
    input: StartBulkOperationInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationStartWorkflowArgs = {
    input: StartWorkflowInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationStartWorkflowsArgs = {
    input: StartWorkflowsInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationSubmitFormArgs = {
    input: SubmitFormInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationUpdateScheduleArgs = {
    input: UpdateScheduleInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationUpdateWorkflowArgs = {
    input: UpdateWorkflowInput;
};
/**
 * Operations on workflows. Each takes one input object and returns a payload. An operation that fails
 * changed nothing; its error carries extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, INTERNAL)
 * and, when an input field is at fault, extensions.field.
 */
export type MutationWakeUpWorkflowArgs = {
    input: WorkflowActionInput;
};
/** An object with a globally unique, opaque ID that Query.node resolves. Clients never parse IDs. */
export type Node = {
    /** The object's opaque ID. */
    id: Scalars['ID']['output'];
};
/** A sort direction. */
export type OrderDirection = 
/** Lowest first. */
'ASC'
/** Highest first. */
 | 'DESC';
/** Relay page information. */
export type PageInfo = {
    __typename?: 'PageInfo';
    /** The cursor of the last item of the page. */
    endCursor?: Maybe<Scalars['String']['output']>;
    /** Whether more items follow the page. */
    hasNextPage: Scalars['Boolean']['output'];
    /** Whether more items precede the page. */
    hasPreviousPage: Scalars['Boolean']['output'];
    /** The cursor of the first item of the page. */
    startCursor?: Maybe<Scalars['String']['output']>;
};
export type PollTasksInput = {
    /** The functions this worker serves (at least one, at most 100). */
    functions: Array<Scalars['String']['input']>;
    /** How long the lease lasts, in milliseconds (1000 to 3600000, default 30000). */
    leaseMs?: InputMaybe<Scalars['Int']['input']>;
    /** The most tasks to lease (1 to 100, default 1). */
    max?: InputMaybe<Scalars['Int']['input']>;
    /** How long to wait for a task when none is pending, in milliseconds (0 to 60000, default 0). */
    waitMs?: InputMaybe<Scalars['Int']['input']>;
    /** The worker's name, listed in remoteWorkers and as the host of its task instances. */
    worker?: InputMaybe<Scalars['String']['input']>;
};
export type PollTasksPayload = {
    __typename?: 'PollTasksPayload';
    /** The tasks leased, oldest first; empty when none came within waitMs. */
    tasks: Array<RemoteTask>;
};
/** The input of publishEvent. */
export type PublishEventInput = {
    /** The CloudEvent, in its JSON form. */
    event: Scalars['JSON']['input'];
};
/** The outcome of publishEvent. */
export type PublishEventPayload = {
    __typename?: 'PublishEventPayload';
    /** The workflows the event was delivered to. */
    delivered: Array<Workflow>;
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type Query = {
    __typename?: 'Query';
    /** Alert deliveries, newest first. */
    alertDeliveries: AlertDeliveryPage;
    /** The alert rules, oldest first (ADMIN only: a webhook URL may carry a secret). */
    alertRules: Array<AlertRule>;
    /** The audit log, newest first. */
    auditLog: AuditLogPage;
    /** One bulk operation by ID; null when there is none. */
    bulkOperation?: Maybe<BulkOperation>;
    /** Bulk operations, newest first. */
    bulkOperations: Array<BulkOperation>;
    /** Every executor (a node's worker pool) that ever registered, newest first; a page of them with first. */
    executors: Array<Executor>;
    /** Every flow control in force (run-time and definitions'), by type. */
    flowControls: Array<FlowControl>;
    /** Any object by its opaque ID (Relay); null when nothing has this ID. */
    node?: Maybe<Node>;
    /** Several objects by ID, in the order asked; null for each ID that names nothing. */
    nodes: Array<Maybe<Node>>;
    /** The remote workers that polled for tasks, by name. */
    remoteWorkers: Array<RemoteWorker>;
    /** One schedule, by id or by name (exactly one of them); null when there is none. */
    schedule?: Maybe<Schedule>;
    /** Every schedule, oldest first; a page of them with first. */
    schedules: Array<Schedule>;
    /** The API tokens not revoked, by name (ADMIN only). */
    tokens: Array<ApiToken>;
    /** One workflow by ID; null when there is none. */
    workflow?: Maybe<Workflow>;
    /** The workflow of a type started with an external ID; null when there is none. */
    workflowByExternalId?: Maybe<Workflow>;
    /** One version of a definition (the newest when version is null); null when there is none. */
    workflowDefinition?: Maybe<WorkflowDefinition>;
    /** The registered workflow definitions: the newest version of each type, or every version. */
    workflowDefinitions: Array<WorkflowDefinition>;
    /** Counts of workflows by status and by type, for dashboards. */
    workflowStats: WorkflowStats;
    /**
     * A page of workflows matching a filter, in an order (newest first by default). Page forward with
     * first/after, backward with last/before; a page holds at most 500 workflows (50 when neither first
     * nor last is given).
     */
    workflows: WorkflowConnection;
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type QueryAlertDeliveriesArgs = {
    after?: InputMaybe<Scalars['String']['input']>;
    filter?: InputMaybe<AlertDeliveryFilter>;
    first?: InputMaybe<Scalars['Int']['input']>;
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type QueryAuditLogArgs = {
    after?: InputMaybe<Scalars['String']['input']>;
    filter?: InputMaybe<AuditLogFilter>;
    first?: InputMaybe<Scalars['Int']['input']>;
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type QueryBulkOperationArgs = {
    id: Scalars['ID']['input'];
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type QueryBulkOperationsArgs = {
    after?: InputMaybe<Scalars['ID']['input']>;
    first?: InputMaybe<Scalars['Int']['input']>;
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type QueryExecutorsArgs = {
    after?: InputMaybe<Scalars['ID']['input']>;
    alive?: InputMaybe<Scalars['Boolean']['input']>;
    first?: InputMaybe<Scalars['Int']['input']>;
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type QueryNodeArgs = {
    id: Scalars['ID']['input'];
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type QueryNodesArgs = {
    ids: Array<Scalars['ID']['input']>;
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type QueryRemoteWorkersArgs = {
    alive?: InputMaybe<Scalars['Boolean']['input']>;
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type QueryScheduleArgs = {
    id?: InputMaybe<Scalars['ID']['input']>;
    name?: InputMaybe<Scalars['String']['input']>;
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type QuerySchedulesArgs = {
    after?: InputMaybe<Scalars['ID']['input']>;
    first?: InputMaybe<Scalars['Int']['input']>;
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type QueryWorkflowArgs = {
    id: Scalars['ID']['input'];
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type QueryWorkflowByExternalIdArgs = {
    externalId: Scalars['String']['input'];
    type: Scalars['String']['input'];
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type QueryWorkflowDefinitionArgs = {
    type: Scalars['String']['input'];
    version?: InputMaybe<Scalars['Int']['input']>;
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type QueryWorkflowDefinitionsArgs = {
    allVersions?: InputMaybe<Scalars['Boolean']['input']>;
    type?: InputMaybe<Scalars['String']['input']>;
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type QueryWorkflowStatsArgs = {
    filter?: InputMaybe<WorkflowFilter>;
};
/**
 * The entry points for reading. Lookups by ID return null for an ID that names nothing, and fail with
 * code INVALID_INPUT for an ID that is not an ID of the right kind.
 */
export type QueryWorkflowsArgs = {
    after?: InputMaybe<Scalars['String']['input']>;
    before?: InputMaybe<Scalars['String']['input']>;
    filter?: InputMaybe<WorkflowFilter>;
    first?: InputMaybe<Scalars['Int']['input']>;
    last?: InputMaybe<Scalars['Int']['input']>;
    orderBy?: InputMaybe<WorkflowOrder>;
};
/** A rate limit: at most limit step starts per period, spread evenly. */
export type RateLimit = {
    __typename?: 'RateLimit';
    /** The jq expression over a workflow's input giving its rate key (none: one rate for the type). */
    key?: Maybe<Scalars['String']['output']>;
    limit: Scalars['Int']['output'];
    /** The period, in milliseconds. */
    periodMs: Scalars['Int']['output'];
};
export type RateLimitInput = {
    /** A jq expression over the input giving a workflow's rate key. */
    key?: InputMaybe<Scalars['String']['input']>;
    /** Step starts per period (at least 1). */
    limit: Scalars['Int']['input'];
    /** A period such as 1s, 1m or PT1S. */
    period: Scalars['String']['input'];
};
/** Whether a definition may start new workflows. */
export type ReleaseState = 
/** No new workflow starts; running ones go on. */
'OFFLINE'
/** New workflows may start. */
 | 'ONLINE';
/** A leased task: call the function with input, then complete or fail it with token. */
export type RemoteTask = {
    __typename?: 'RemoteTask';
    /** The attempt, from 1: a lease that ran out and a retried failure count as attempts. */
    attempt: Scalars['Int']['output'];
    /** When the lease runs out unless extended. */
    deadline: Scalars['Time']['output'];
    function: Scalars['String']['output'];
    /** The task's opaque ID. */
    id: Scalars['ID']['output'];
    /** The call's arguments. */
    input?: Maybe<Scalars['JSON']['output']>;
    /** Holds the lease: pass it to heartbeatTask, completeTask or failTask. */
    token: Scalars['String']['output'];
    /**
     * The W3C traceparent of the trace the task's workflow was started in (a traceparent header on the
     * request that started it), for the worker's own spans; null when it was started in none.
     */
    traceparent?: Maybe<Scalars['String']['output']>;
    /** The workflow whose step called the function. */
    workflow?: Maybe<Workflow>;
};
/** A worker that polled for tasks. */
export type RemoteWorker = {
    __typename?: 'RemoteWorker';
    /** Whether it polled within the last 30 s (a worker waiting in a long poll is recorded every 10 s). */
    alive: Scalars['Boolean']['output'];
    /** The functions its last recorded poll named. */
    functions: Array<Scalars['String']['output']>;
    /** When it last polled (recorded at most about once a second). */
    lastPoll: Scalars['Time']['output'];
    name: Scalars['String']['output'];
    /** The tasks it holds a live lease on. */
    tasksHeld: Scalars['Int']['output'];
};
export type RerunWorkflowInput = {
    /** The ended workflow to run again. */
    id: Scalars['ID']['input'];
    /** The new workflow's input (a JSON object); the original's when null. */
    input?: InputMaybe<Scalars['JSON']['input']>;
    /** Run the newest version of the definition instead of the original's. */
    latestVersion?: InputMaybe<Scalars['Boolean']['input']>;
    /** Why: recorded in the audit log. */
    reason?: InputMaybe<Scalars['String']['input']>;
    /** The state to start from; the definition's start state when null. */
    state?: InputMaybe<Scalars['String']['input']>;
};
export type RerunWorkflowPayload = {
    __typename?: 'RerunWorkflowPayload';
    /** The new workflow (its rerunOf is the original). */
    workflow: Workflow;
};
/** How often a failing state runs again and how long it waits in between. */
export type RetryPolicy = {
    __typename?: 'RetryPolicy';
    /** How much each delay is spread, as a fraction (0.2: ±20%). */
    jitter: Scalars['Float']['output'];
    /** Attempts in all, the first included. */
    maxAttempts: Scalars['Int']['output'];
    /** The longest backoff, in milliseconds. */
    maxBackoffMs: Scalars['Int']['output'];
    /** The first backoff, in milliseconds (doubling each time). */
    minBackoffMs: Scalars['Int']['output'];
};
/** Retries a MANUAL or FAILED workflow. */
export type RetryWorkflowInput = {
    /** The workflow. */
    id: Scalars['ID']['input'];
    /** The same key returns the workflow unchanged. */
    idempotencyKey?: InputMaybe<Scalars['String']['input']>;
    /** Why (recorded on the action). */
    reason?: InputMaybe<Scalars['String']['input']>;
    /** The state to run again; the state that failed when omitted. */
    state?: InputMaybe<Scalars['String']['input']>;
};
/** A token to revoke. */
export type RevokeTokenInput = {
    /** Its name. */
    name: Scalars['String']['input'];
};
/** The result of revokeToken. */
export type RevokeTokenPayload = {
    __typename?: 'RevokeTokenPayload';
    /** True: the token is refused from now on (open streams with it end). */
    revoked: Scalars['Boolean']['output'];
};
/** What an API token may do. */
export type Role = 
/** Everything. */
'ADMIN'
/** Start and act on workflows and schedules, and read; not deploy, flow control, alert rules or tokens. */
 | 'OPERATOR'
/** Queries and subscriptions only. */
 | 'READER'
/** Poll, heartbeat, complete and fail its functions' remote tasks only. */
 | 'WORKER';
/** Starts workflows of a type on a cron expression. */
export type Schedule = {
    __typename?: 'Schedule';
    /** The schedule's own alert rule (null: none). */
    alertRuleId?: Maybe<Scalars['ID']['output']>;
    /** When it was made. */
    created: Scalars['Time']['output'];
    /** The cron expression. */
    cron: Scalars['String']['output'];
    /** No fire after this time. */
    endAt?: Maybe<Scalars['Time']['output']>;
    /** The schedule's opaque ID. */
    id: Scalars['ID']['output'];
    /** The input of every run (a JSON object). */
    input: Scalars['JSON']['output'];
    /** When it last fired. */
    lastFire?: Maybe<Scalars['Time']['output']>;
    /** When it last changed. */
    modified: Scalars['Time']['output'];
    /** The schedule's unique name; null when it has none. */
    name?: Maybe<Scalars['String']['output']>;
    /** When it fires next; null when it will not fire again. */
    nextFire?: Maybe<Scalars['Time']['output']>;
    /** What a fire does while the previous run has not ended. */
    overlapPolicy: ScheduleOverlapPolicy;
    /** Whether it is paused. */
    paused: Scalars['Boolean']['output'];
    /** The priority of every run. */
    priority: Scalars['Int']['output'];
    /**
     * How many fire times started no run: under SKIP the previous run had not ended, or a node reached
     * the fire time more than a minute late (the node was stopped or behind; a schedule whose every due
     * fire time is that late starts one run for the latest). Due fire times within the minute each start
     * their run.
     */
    skippedFires: Scalars['Int']['output'];
    /** No fire before this time. */
    startAt?: Maybe<Scalars['Time']['output']>;
    /** The IANA time zone the expression is read in. */
    timezone: Scalars['String']['output'];
    /** The workflow type it starts. */
    type: Scalars['String']['output'];
};
/** What a schedule does when it fires while its previous run has not ended. */
export type ScheduleOverlapPolicy = 
/** Start another run. */
'ALLOW'
/** Skip the fire. */
 | 'SKIP';
/** The result of a schedule operation. */
export type SchedulePayload = {
    __typename?: 'SchedulePayload';
    /** The schedule after the operation. */
    schedule: Schedule;
};
/** Puts a definition type online or offline. */
export type SetDefinitionReleaseStateInput = {
    /** The new release state. */
    releaseState: ReleaseState;
    /** The definition type (every version). */
    type: Scalars['String']['input'];
};
export type SetFlowControlInput = {
    concurrency?: InputMaybe<ConcurrencyInput>;
    rateLimit?: InputMaybe<RateLimitInput>;
    /** The definition type. */
    type: Scalars['String']['input'];
};
/** Pauses or resumes a schedule. */
export type SetSchedulePausedInput = {
    /** The schedule. */
    id: Scalars['ID']['input'];
    /** True to pause, false to resume. */
    paused: Scalars['Boolean']['input'];
};
/** A non-deterministic value a step recorded; a step running again gets the same value. */
export type SideEffect = Node & {
    __typename?: 'SideEffect';
    /** When it was recorded. */
    created: Scalars['Time']['output'];
    /** The side effect's opaque ID. */
    id: Scalars['ID']['output'];
    /** The key the step recorded it under. */
    key: Scalars['String']['output'];
    /** The value. */
    value: Scalars['JSON']['output'];
    /** The Go type of the value. */
    valueType: Scalars['String']['output'];
};
/** An external message to a workflow. */
export type Signal = {
    __typename?: 'Signal';
    /** When a state consumed it; null while it waits. */
    consumed?: Maybe<Scalars['Time']['output']>;
    /** The action that consumed it. */
    consumedBy?: Maybe<Action>;
    /** When it arrived. */
    created: Scalars['Time']['output'];
    /** The signal's opaque ID. */
    id: Scalars['ID']['output'];
    /** The key that made its delivery idempotent. */
    idempotencyKey?: Maybe<Scalars['String']['output']>;
    /** Its name (what a WAIT state waits for). */
    name: Scalars['String']['output'];
    /** Its payload. */
    payload?: Maybe<Scalars['JSON']['output']>;
};
/** Sends a signal to a workflow. */
export type SignalWorkflowInput = {
    /** The workflow. */
    id: Scalars['ID']['input'];
    /** The same key delivers the signal once. */
    idempotencyKey?: InputMaybe<Scalars['String']['input']>;
    /** The signal's name. */
    name: Scalars['String']['input'];
    /** Its payload (any JSON). */
    payload?: InputMaybe<Scalars['JSON']['input']>;
};
export type StartBulkOperationInput = {
    action: BulkAction;
    /** Confirms an empty filter: the action is meant for every workflow. */
    all?: InputMaybe<Scalars['Boolean']['input']>;
    /** Count what the filter matches and what the action would change, and change nothing. */
    dryRun?: InputMaybe<Scalars['Boolean']['input']>;
    /** Which workflows. An empty filter (every workflow) needs all: true unless it is a dry run. */
    filter: WorkflowFilter;
    /** Why: recorded on the operation and on every action it writes. */
    reason?: InputMaybe<Scalars['String']['input']>;
    /** For SIGNAL: the signal to deliver. */
    signal?: InputMaybe<BulkSignalInput>;
    /** For RETRY: the state to run again (the state that failed by default). */
    state?: InputMaybe<Scalars['String']['input']>;
};
/** Starts one workflow. */
export type StartWorkflowInput = {
    /**
     * Search attributes: a flat JSON object of names to strings, numbers, booleans and times (RFC 3339
     * strings), which workflows(filter: {attributes: ...}) finds by. A name's kind is fixed by its first
     * use (a string in RFC 3339 form makes a time attribute). At most 32 attributes, names of at most 64
     * characters (a letter or _, then letters, digits, _, . or -), strings of at most 255 characters:
     * INVALID_INPUT names the attribute at fault (field attributes.<name>).
     */
    attributes?: InputMaybe<Scalars['JSON']['input']>;
    /** A business reference. */
    businessKey?: InputMaybe<Scalars['String']['input']>;
    /** The workflow's key under its type's concurrency limit (overrides the limit's key expression). */
    concurrencyKey?: InputMaybe<Scalars['String']['input']>;
    /** Fold this start into the not yet run workflow of the same type and debounce key (its input is replaced, it runs one period after this start). */
    debounce?: InputMaybe<DebounceInput>;
    /** The caller's ID, unique per type: starting again with it returns the existing workflow. */
    externalId?: InputMaybe<Scalars['String']['input']>;
    /** The same key returns the first result and starts nothing new. */
    idempotencyKey?: InputMaybe<Scalars['String']['input']>;
    /** The input handed to its steps (a JSON object). */
    input?: InputMaybe<Scalars['JSON']['input']>;
    /** A token the starter chooses. */
    launchToken?: InputMaybe<Scalars['String']['input']>;
    /** Higher runs first (default 0). */
    priority?: InputMaybe<Scalars['Int']['input']>;
    /** Delay the first step to this time. */
    startAt?: InputMaybe<Scalars['Time']['input']>;
    /** The definition type. */
    type: Scalars['String']['input'];
    /** The initial variables (a JSON object). */
    variables?: InputMaybe<Scalars['JSON']['input']>;
};
/** The outcome of startWorkflow. */
export type StartWorkflowPayload = {
    __typename?: 'StartWorkflowPayload';
    /** False when an existing workflow was returned (same externalId or idempotencyKey). */
    created: Scalars['Boolean']['output'];
    /** True when the start folded into an existing workflow that had not run (workflow). */
    debounced: Scalars['Boolean']['output'];
    /** The workflow started, or the one that already existed. */
    workflow: Workflow;
};
/** Starts many workflows at once. */
export type StartWorkflowsInput = {
    /** One input per workflow (at most 1000). */
    workflows: Array<StartWorkflowInput>;
};
/** The outcome of startWorkflows, in the order of the inputs. */
export type StartWorkflowsPayload = {
    __typename?: 'StartWorkflowsPayload';
    /** One result per input. */
    results: Array<StartWorkflowPayload>;
};
/** One state of a definition. */
export type StateDefinition = {
    __typename?: 'StateDefinition';
    /** What it does. */
    description?: Maybe<Scalars['String']['output']>;
    /** The JSON Schema of the form a person submits in this state. */
    formSchema?: Maybe<Scalars['JSON']['output']>;
    /** What it is for. */
    kind: StateKind;
    /** Its name. */
    name: Scalars['String']['output'];
    /** The states it may move to. */
    next: Array<Scalars['String']['output']>;
    /** Its own retry policy, when it overrides the definition's. */
    retryPolicy?: Maybe<RetryPolicy>;
    /** How long one run may take (a WAIT state: the whole wait), in milliseconds; null: the definition's. */
    timeoutMs?: Maybe<Scalars['Int']['output']>;
    /** Whether a WAIT state waits for the workflow's children. */
    waitForChildren: Scalars['Boolean']['output'];
    /** The signal a WAIT state waits for. */
    waitForSignal?: Maybe<Scalars['String']['output']>;
};
/** What a state of a definition is for. */
export type StateKind = 
/** Finishes the workflow. */
'END'
/** Fails the workflow. */
 | 'ERROR'
/** Stops the workflow (status MANUAL) until a person moves it on. */
 | 'MANUAL'
/** Runs its handler and moves on. */
 | 'NORMAL'
/** Where a workflow begins. */
 | 'START'
/** Waits for a signal or for the workflow's children. */
 | 'WAIT';
/** A number of workflows in one status. */
export type StatusCount = {
    __typename?: 'StatusCount';
    /** How many. */
    count: Scalars['Int']['output'];
    /** Whether count is an estimate. */
    isEstimate: Scalars['Boolean']['output'];
    /** The status. */
    status: WorkflowStatus;
};
/** The data a person submits for a user task. */
export type SubmitFormInput = {
    /** What the person filled in: a JSON object valid against the state's form schema. */
    data: Scalars['JSON']['input'];
    /** The workflow. */
    id: Scalars['ID']['input'];
    /** The same key submits once. */
    idempotencyKey?: InputMaybe<Scalars['String']['input']>;
    /** A signature of the data, kept with it. */
    signature?: InputMaybe<Scalars['String']['input']>;
    /** Who submits it. */
    submittedBy: Scalars['String']['input'];
};
/**
 * Live streams, over graphql-transport-ws (or the legacy graphql-ws) and over Server-Sent Events. A
 * subscriber that cannot keep up is ended with an error whose extensions.code is SLOW_SUBSCRIBER and
 * whose extensions.cursor is the last event it was sent: subscribing again with after set to it
 * resumes with every event it missed.
 */
export type Subscription = {
    __typename?: 'Subscription';
    /** The bulk operation now and each time its progress or status changes, until it ends. */
    bulkOperationUpdated: BulkOperation;
    /**
     * The change events of workflows matching a filter, in commit order. With after (an event cursor),
     * every event after it, then live ones; without, only events from now on.
     */
    workflowEvents: WorkflowEvent;
    /** The workflow each time it changes. */
    workflowUpdated: Workflow;
};
/**
 * Live streams, over graphql-transport-ws (or the legacy graphql-ws) and over Server-Sent Events. A
 * subscriber that cannot keep up is ended with an error whose extensions.code is SLOW_SUBSCRIBER and
 * whose extensions.cursor is the last event it was sent: subscribing again with after set to it
 * resumes with every event it missed.
 */
export type SubscriptionBulkOperationUpdatedArgs = {
    id: Scalars['ID']['input'];
};
/**
 * Live streams, over graphql-transport-ws (or the legacy graphql-ws) and over Server-Sent Events. A
 * subscriber that cannot keep up is ended with an error whose extensions.code is SLOW_SUBSCRIBER and
 * whose extensions.cursor is the last event it was sent: subscribing again with after set to it
 * resumes with every event it missed.
 */
export type SubscriptionWorkflowEventsArgs = {
    after?: InputMaybe<Scalars['String']['input']>;
    filter?: InputMaybe<WorkflowFilter>;
};
/**
 * Live streams, over graphql-transport-ws (or the legacy graphql-ws) and over Server-Sent Events. A
 * subscriber that cannot keep up is ended with an error whose extensions.code is SLOW_SUBSCRIBER and
 * whose extensions.cursor is the last event it was sent: subscribing again with after set to it
 * resumes with every event it missed.
 */
export type SubscriptionWorkflowUpdatedArgs = {
    id: Scalars['ID']['input'];
};
export type TaskErrorInput = {
    detail?: InputMaybe<Scalars['String']['input']>;
    /** An HTTP status that fits the error (100 to 599). */
    status?: InputMaybe<Scalars['Int']['input']>;
    title?: InputMaybe<Scalars['String']['input']>;
    /** A URI naming the kind of error (default: the runtime error of Serverless Workflow). */
    type?: InputMaybe<Scalars['String']['input']>;
};
/** One execution attempt of one state by a worker. */
export type TaskInstance = Node & {
    __typename?: 'TaskInstance';
    /** What the step logged during this attempt. */
    activityLogs: Array<ActivityLog>;
    /** Which attempt of the state, from 1. */
    attempt: Scalars['Int']['output'];
    /** The error it ended with. */
    error?: Maybe<Scalars['String']['output']>;
    /** The executor that ran it. */
    executor?: Maybe<Executor>;
    /** When it ended. */
    finished?: Maybe<Scalars['Time']['output']>;
    /** The host it ran on. */
    host: Scalars['String']['output'];
    /** The task instance's opaque ID. */
    id: Scalars['ID']['output'];
    /** What the step returned. */
    output?: Maybe<Scalars['JSON']['output']>;
    /** When it began. */
    started: Scalars['Time']['output'];
    /** The state it ran. */
    state: Scalars['String']['output'];
    /** Its outcome. */
    status: TaskInstanceStatus;
    /** The handler or built-in step kind. */
    taskType: Scalars['String']['output'];
    /** The workflow it ran. */
    workflow: Workflow;
};
/** A page of a workflow's task instances, oldest first. */
export type TaskInstanceConnection = {
    __typename?: 'TaskInstanceConnection';
    /** The task instances with their cursors. */
    edges: Array<TaskInstanceEdge>;
    /** The task instances. */
    nodes: Array<TaskInstance>;
    /** Where the page lies. */
    pageInfo: PageInfo;
    /** How many task instances the workflow has. */
    totalCount: Scalars['Int']['output'];
};
/** A task instance in a page. */
export type TaskInstanceEdge = {
    __typename?: 'TaskInstanceEdge';
    /** The task instance's position, for after/before. */
    cursor: Scalars['String']['output'];
    /** The task instance. */
    node: TaskInstance;
};
/** The outcome of one execution attempt. */
export type TaskInstanceStatus = 
/** The workflow was cancelled while the step ran. */
'CANCELLED'
/** The step returned an error, panicked (its error names an incident in the node's log) or failed its workflow. */
 | 'FAILED'
/** Its node died (another took the workflow over, and the attempt counts), or a remote task's lease ran out. */
 | 'LOST'
/** Still running. */
 | 'RUNNING'
/** The step returned normally. */
 | 'SUCCEEDED'
/** The step ran past its deadline. */
 | 'TIMED_OUT';
export type TaskPayload = {
    __typename?: 'TaskPayload';
    /** The task's opaque ID. */
    id: Scalars['ID']['output'];
    /** SUCCEEDED or FAILED. */
    status: Scalars['String']['output'];
};
/** The workflows of one type. */
export type TypeCount = {
    __typename?: 'TypeCount';
    /** How many per status. */
    byStatus: Array<StatusCount>;
    /** How many in all. */
    count: Scalars['Int']['output'];
    /** Whether count is an estimate. */
    isEstimate: Scalars['Boolean']['output'];
    /** The type. */
    type: Scalars['String']['output'];
};
/** A change of a schedule: only the fields given change; its next fire is computed again. */
export type UpdateScheduleInput = {
    /** A new cron expression. */
    cron?: InputMaybe<Scalars['String']['input']>;
    /** A new last time. */
    endAt?: InputMaybe<Scalars['Time']['input']>;
    /** The schedule. */
    id: Scalars['ID']['input'];
    /** A new input of every run (a JSON object). */
    input?: InputMaybe<Scalars['JSON']['input']>;
    /** A new overlap policy. */
    overlapPolicy?: InputMaybe<ScheduleOverlapPolicy>;
    /** A new priority of every run. */
    priority?: InputMaybe<Scalars['Int']['input']>;
    /** A new first time. */
    startAt?: InputMaybe<Scalars['Time']['input']>;
    /** A new IANA time zone. */
    timezone?: InputMaybe<Scalars['String']['input']>;
};
/** Changes a workflow; give at least one of state, stateText, nextActivation, clearNextActivation, variables. */
export type UpdateWorkflowInput = {
    /** Search attributes to merge (a JSON object; a null value removes an attribute). */
    attributes?: InputMaybe<Scalars['JSON']['input']>;
    /** Unschedule it. */
    clearNextActivation?: InputMaybe<Scalars['Boolean']['input']>;
    /** The workflow. */
    id: Scalars['ID']['input'];
    /** The same key returns the workflow unchanged. */
    idempotencyKey?: InputMaybe<Scalars['String']['input']>;
    /** Reschedule it. */
    nextActivation?: InputMaybe<Scalars['Time']['input']>;
    /** Why (recorded on the action). */
    reason?: InputMaybe<Scalars['String']['input']>;
    /** Move it to this state (its status follows the state's kind). */
    state?: InputMaybe<Scalars['String']['input']>;
    /** Set the state text. */
    stateText?: InputMaybe<Scalars['String']['input']>;
    /** Variables to merge (a JSON object; a null value removes a key). */
    variables?: InputMaybe<Scalars['JSON']['input']>;
};
/** One variable an action set. */
export type VariableChange = {
    __typename?: 'VariableChange';
    /** The variable's name. */
    key: Scalars['String']['output'];
    /** Its new value; null when the action removed it. */
    value?: Maybe<Scalars['JSON']['output']>;
};
/** One workflow instance: a persistent state machine running a definition. */
export type Workflow = Node & {
    __typename?: 'Workflow';
    /** Its history: one action per change of state, oldest first (at most 500 per page, 50 by default). */
    actions: ActionConnection;
    /** What its steps logged, oldest first. */
    activityLogs: Array<ActivityLog>;
    /** The workflow's search attributes: a JSON object (times as RFC 3339 strings in UTC); {} when none. */
    attributes: Scalars['JSON']['output'];
    /** Why a due workflow does not run: its key's slots are taken, or its rate limit's next slot is later (null: nothing holds it back). */
    blockedReason?: Maybe<Scalars['String']['output']>;
    /** A business reference (an order number...), not unique. */
    businessKey?: Maybe<Scalars['String']['output']>;
    /** The workflows it started, oldest first. */
    children: WorkflowConnection;
    /** Its key under its type's concurrency limit (null: none). */
    concurrencyKey?: Maybe<Scalars['String']['output']>;
    /** When it was started. */
    created: Scalars['Time']['output'];
    /** The definition version it runs. */
    definition?: Maybe<WorkflowDefinition>;
    /** The version of its definition it runs (the version it started with). */
    definitionVersion: Scalars['Int']['output'];
    /** The executor holding it now (while EXECUTING). */
    executor?: Maybe<Executor>;
    /** The group of workers that runs it. */
    executorGroup: Scalars['String']['output'];
    /** The caller's ID for it, unique per type. */
    externalId?: Maybe<Scalars['String']['output']>;
    /** When it ended. */
    finished?: Maybe<Scalars['Time']['output']>;
    /** The forms people submitted for its user tasks, oldest first. */
    formSubmissions: Array<FormSubmission>;
    /** The workflow's opaque ID. */
    id: Scalars['ID']['output'];
    /** Its input (a JSON object). */
    input: Scalars['JSON']['output'];
    /** The error of its last failed attempt. */
    lastError?: Maybe<Scalars['String']['output']>;
    /** A token the starter chose. */
    launchToken?: Maybe<Scalars['String']['output']>;
    /** When it last changed. */
    modified: Scalars['Time']['output'];
    /** When it runs next; null when nothing is scheduled. */
    nextActivation?: Maybe<Scalars['Time']['output']>;
    /**
     * The workflow's output: for a deployed definition, the last task's output after the document's
     * output.as, set when it finishes (the variable `output`); null until then.
     */
    output?: Maybe<Scalars['JSON']['output']>;
    /** The workflow that started it. */
    parent?: Maybe<Workflow>;
    /** The parent's action that started it. */
    parentAction?: Maybe<Action>;
    /** Higher runs first. */
    priority: Scalars['Int']['output'];
    /** The ended workflow this one reruns (rerunWorkflow); null for a workflow started otherwise, or when the original is gone. */
    rerunOf?: Maybe<Workflow>;
    /** The workflows started as reruns of this one, oldest first. */
    reruns: Array<Workflow>;
    /** Failed attempts in the current state. */
    retries: Scalars['Int']['output'];
    /** The first workflow of its family (itself when it has no parent). */
    root: Workflow;
    /** The non-deterministic values its steps recorded. */
    sideEffects: Array<SideEffect>;
    /** The signals sent to it, oldest first. */
    signals: Array<Signal>;
    /** When its first step began. */
    started?: Maybe<Scalars['Time']['output']>;
    /** The name of its current state. */
    state: Scalars['String']['output'];
    /** A note on the current state. */
    stateText?: Maybe<Scalars['String']['output']>;
    /** Its lifecycle status. */
    status: WorkflowStatus;
    /** When the running step times out. */
    stepDeadline?: Maybe<Scalars['Time']['output']>;
    /**
     * Why the workflow cannot make progress, or null when nothing says it cannot: no live executor
     * serves its type in its executor group; it waits for a remote function that no worker polled
     * within 30 s (named); its attempt has run more than 10 s past its deadline; or it has been due for
     * more than a minute without being claimed (by how long: the nodes are behind). The same rules as
     * WorkflowFilter.stuck.
     */
    stuckReason?: Maybe<Scalars['String']['output']>;
    /** Its execution attempts, oldest first (at most 500 per page, 50 by default). */
    taskInstances: TaskInstanceConnection;
    /** Its definition's type. */
    type: Scalars['String']['output'];
    /** Its variables now (a JSON object). */
    variables: Scalars['JSON']['output'];
    /** Its variables as they stood right after one of its actions (a JSON object). */
    variablesAt: Scalars['JSON']['output'];
    /** The signal it waits for, when WAITING for one. */
    waitingForSignal?: Maybe<Scalars['String']['output']>;
};
/** One workflow instance: a persistent state machine running a definition. */
export type WorkflowActionsArgs = {
    after?: InputMaybe<Scalars['String']['input']>;
    before?: InputMaybe<Scalars['String']['input']>;
    first?: InputMaybe<Scalars['Int']['input']>;
    last?: InputMaybe<Scalars['Int']['input']>;
};
/** One workflow instance: a persistent state machine running a definition. */
export type WorkflowChildrenArgs = {
    after?: InputMaybe<Scalars['String']['input']>;
    before?: InputMaybe<Scalars['String']['input']>;
    first?: InputMaybe<Scalars['Int']['input']>;
    last?: InputMaybe<Scalars['Int']['input']>;
};
/** One workflow instance: a persistent state machine running a definition. */
export type WorkflowTaskInstancesArgs = {
    after?: InputMaybe<Scalars['String']['input']>;
    before?: InputMaybe<Scalars['String']['input']>;
    first?: InputMaybe<Scalars['Int']['input']>;
    last?: InputMaybe<Scalars['Int']['input']>;
};
/** One workflow instance: a persistent state machine running a definition. */
export type WorkflowVariablesAtArgs = {
    actionId: Scalars['ID']['input'];
};
/** Names a workflow for a simple operation. */
export type WorkflowActionInput = {
    /** The workflow. */
    id: Scalars['ID']['input'];
    /** The same key returns the workflow unchanged. */
    idempotencyKey?: InputMaybe<Scalars['String']['input']>;
    /** Why (recorded on the action). */
    reason?: InputMaybe<Scalars['String']['input']>;
};
/** A page of workflows. */
export type WorkflowConnection = {
    __typename?: 'WorkflowConnection';
    /** The workflows with their cursors. */
    edges: Array<WorkflowEdge>;
    /** The workflows. */
    nodes: Array<Workflow>;
    /** Where the page lies in the list. */
    pageInfo: PageInfo;
    /**
     * How many workflows the filter selects in all (one more query; ask only when needed). Counted
     * exactly up to a limit (10,000 by default); above it, the database planner's estimate, and
     * totalCountIsEstimate is true.
     */
    totalCount: Scalars['Int']['output'];
    /** Whether totalCount is an estimate: the count passed the limit counted exactly. */
    totalCountIsEstimate: Scalars['Boolean']['output'];
};
/** One version of a workflow definition. */
export type WorkflowDefinition = Node & {
    __typename?: 'WorkflowDefinition';
    /** sha256 of the canonical form. */
    checksum: Scalars['String']['output'];
    /** When this version was stored. */
    created: Scalars['Time']['output'];
    /** The retry policy of states that set none. */
    defaultRetryPolicy: RetryPolicy;
    /** What it does. */
    description: Scalars['String']['output'];
    /** The group of workers that runs it. */
    executorGroup: Scalars['String']['output'];
    /** The definition version's opaque ID. */
    id: Scalars['ID']['output'];
    /** The document's own version (document.version) of a deployed definition; null for one defined in code. */
    label?: Maybe<Scalars['String']['output']>;
    /** When this version last changed (its release state). */
    modified: Scalars['Time']['output'];
    /** Whether it starts new workflows. */
    releaseState: ReleaseState;
    /** The document of a deployed (Serverless Workflow) definition, as deployed; null for one defined in code. */
    source?: Maybe<Scalars['String']['output']>;
    /** Its states. */
    states: Array<StateDefinition>;
    /** How long one run of a handler may take when its state says nothing, in milliseconds. */
    stepTimeoutMs: Scalars['Int']['output'];
    /** The type workflows name it by. */
    type: Scalars['String']['output'];
    /** The version, from 1; a change of content makes a new one. */
    version: Scalars['Int']['output'];
};
/** The outcome of an operation on a definition. */
export type WorkflowDefinitionPayload = {
    __typename?: 'WorkflowDefinitionPayload';
    /** The newest version of the definition after the operation. */
    definition: WorkflowDefinition;
};
/** A workflow in a page. */
export type WorkflowEdge = {
    __typename?: 'WorkflowEdge';
    /** The workflow's position, for after/before. */
    cursor: Scalars['String']['output'];
    /** The workflow. */
    node: Workflow;
};
/** One change of a workflow, in commit order. */
export type WorkflowEvent = {
    __typename?: 'WorkflowEvent';
    /** The action the change wrote, if any. */
    action?: Maybe<Action>;
    /** When it happened. */
    at: Scalars['Time']['output'];
    /** The event's position: subscribe with after set to it to resume after it. */
    cursor: Scalars['String']['output'];
    /** The workflow's state after it. */
    state: Scalars['String']['output'];
    /** The workflow's status after it. */
    status: WorkflowStatus;
    /** What happened: CREATED, SIGNALED, WOKEN, or an action type. */
    type: Scalars['String']['output'];
    /** The workflow as it is now (it may have changed again since the event). */
    workflow?: Maybe<Workflow>;
    /** The workflow's ID. */
    workflowId: Scalars['ID']['output'];
};
/** Selects workflows; every field given must match (fields left out do not filter). */
export type WorkflowFilter = {
    /** Only the workflows whose search attributes pass every one of these conditions. */
    attributes?: InputMaybe<Array<AttributeFilter>>;
    /** Only workflows with this business key. */
    businessKey?: InputMaybe<Scalars['String']['input']>;
    /** Only workflows created after this time (exclusive). */
    createdAfter?: InputMaybe<Scalars['Time']['input']>;
    /** Only workflows created before this time (exclusive). */
    createdBefore?: InputMaybe<Scalars['Time']['input']>;
    /** Only workflows of this executor group. */
    executorGroup?: InputMaybe<Scalars['String']['input']>;
    /** Only the workflow with this external ID. */
    externalId?: InputMaybe<Scalars['String']['input']>;
    /** Only these workflows. */
    ids?: InputMaybe<Array<Scalars['ID']['input']>>;
    /** Only children of this workflow. */
    parentId?: InputMaybe<Scalars['ID']['input']>;
    /** Only descendants of this root workflow. */
    rootId?: InputMaybe<Scalars['ID']['input']>;
    /** Only workflows in these states. */
    states?: InputMaybe<Array<Scalars['String']['input']>>;
    /** Only these statuses. */
    statuses?: InputMaybe<Array<WorkflowStatus>>;
    /**
     * Only the workflows that are stuck (true: those with a stuckReason) or not (false). Not offered
     * by workflowEvents (INVALID_INPUT): a workflow becomes stuck by the passing of time, with no event.
     */
    stuck?: InputMaybe<Scalars['Boolean']['input']>;
    /**
     * Only workflows with no parent (true), such as those a person or a schedule started, or only
     * children (false): sub-workflows and fork branches. All when null.
     */
    topLevel?: InputMaybe<Scalars['Boolean']['input']>;
    /** Only these definition types. */
    types?: InputMaybe<Array<Scalars['String']['input']>>;
};
/** An order of workflows. */
export type WorkflowOrder = {
    /** The direction (DESC when omitted). */
    direction?: InputMaybe<OrderDirection>;
    /** The column. */
    field: WorkflowOrderField;
};
/** The columns workflows can be ordered by (ties are broken by ID, in the same direction). */
export type WorkflowOrderField = 
/** When the workflow was started (creation order: the order in which cairn stored them). */
'CREATED'
/** When the workflow last changed. */
 | 'MODIFIED'
/** When the workflow runs next; workflows with nothing scheduled come last. */
 | 'NEXT_ACTIVATION'
/** The workflow's priority (higher runs first). */
 | 'PRIORITY';
/** The outcome of an operation on one workflow. */
export type WorkflowPayload = {
    __typename?: 'WorkflowPayload';
    /** The workflow after the operation. */
    workflow: Workflow;
};
/**
 * Workflow counts for dashboards. Each count is exact up to a limit (10,000 by default) and the
 * database planner's estimate above it, flagged by its isEstimate field.
 */
export type WorkflowStats = {
    __typename?: 'WorkflowStats';
    /** Workflows per status (statuses with none left out). */
    byStatus: Array<StatusCount>;
    /** Workflows per type, with their statuses. */
    byType: Array<TypeCount>;
    /** How many of the workflows counted are stuck (see Workflow.stuckReason); counted up to 10,000. */
    stuck: Scalars['Int']['output'];
    /** Workflows in all. */
    total: Scalars['Int']['output'];
    /** Whether total is an estimate. */
    totalIsEstimate: Scalars['Boolean']['output'];
};
/** A workflow's lifecycle status. */
export type WorkflowStatus = 
/** Cancelled by an operator. */
'CANCELLED'
/** Started, never run yet. */
 | 'CREATED'
/** A worker is running one of its steps. */
 | 'EXECUTING'
/** Reached an ERROR state. */
 | 'FAILED'
/** Reached an END state. */
 | 'FINISHED'
/** Scheduled to run at nextActivation. */
 | 'IN_PROGRESS'
/** Needs a person: a MANUAL state, or retries exhausted without an ERROR state. */
 | 'MANUAL'
/** Paused by an operator; it does not run until resumed. */
 | 'PAUSED'
/** Waiting for a signal, a timer or its children. */
 | 'WAITING';
