import type { RetryWorkflowInput, SignalWorkflowInput, StartWorkflowInput, Workflow as WorkflowType, WorkflowActionInput, WorkflowEvent as WorkflowEventType, WorkflowFilter, WorkflowStatus } from './generated/graphql.js';
import { Transport } from './transport.js';
/** The fields of a workflow the client reads. */
export declare const WORKFLOW_FIELDS = "id type definitionVersion externalId businessKey status state stateText retries waitingForSignal lastError input variables output created modified started finished";
/** A workflow as the client returns it: the fields of WORKFLOW_FIELDS. */
export type Workflow = Pick<WorkflowType, 'id' | 'type' | 'definitionVersion' | 'externalId' | 'businessKey' | 'status' | 'state' | 'stateText' | 'retries' | 'waitingForSignal' | 'lastError' | 'input' | 'variables' | 'output' | 'created' | 'modified' | 'started' | 'finished'>;
/** A change event of workflowEvents, with the default fields. */
export type WorkflowEvent = Pick<WorkflowEventType, 'cursor' | 'type' | 'at' | 'status' | 'state' | 'workflowId'>;
/** The statuses in which a workflow has ended. */
export declare const ENDED: readonly WorkflowStatus[];
/** The options of startWorkflow: StartWorkflowInput without its type. */
export type StartOptions = Omit<StartWorkflowInput, 'type'>;
export interface ClientOptions {
    /** cairn's GraphQL endpoint, such as http://127.0.0.1:8080/graphql. */
    url: string;
    /** An API token, when cairn runs with --auth. */
    token?: string;
}
/**
 * A connection to one cairn endpoint. The first call to a wrong URL rejects with ConnectionFailed,
 * with a wrong token with CairnError code UNAUTHENTICATED; an operation cairn refuses rejects with
 * CairnError and its code and field.
 */
export declare class Client {
    readonly url: string;
    /** @internal */
    readonly transport: Transport;
    constructor(opts: ClientOptions);
    /** Runs any query or mutation and returns its data. */
    graphql<T = Record<string, unknown>>(query: string, variables?: Record<string, unknown>, signal?: AbortSignal): Promise<T>;
    /**
     * Starts a workflow of a registered type and returns it. Starting again with the same
     * externalId or idempotencyKey returns the workflow already started.
     */
    startWorkflow(type: string, opts?: StartOptions): Promise<Workflow>;
    /** The workflow with this ID, or null when there is none. */
    getWorkflow(id: string): Promise<Workflow | null>;
    /**
     * Follows the workflow (subscription workflowUpdated over Server-Sent Events) until it has ended
     * (FINISHED, FAILED or CANCELLED) and returns it. Rejects with a TimeoutError (name
     * 'TimeoutError') when it has not ended within timeoutMs, with CairnError NOT_FOUND when there is
     * no such workflow.
     */
    wait(id: string, opts?: {
        timeoutMs?: number;
        signal?: AbortSignal;
    }): Promise<Workflow>;
    private operation;
    /** Sends the signal name with a payload to the workflow. */
    signal(id: string, name: string, opts?: Omit<SignalWorkflowInput, 'id' | 'name'>): Promise<Workflow>;
    /** Runs a MANUAL or FAILED workflow again (from opts.state, else the state that failed). */
    retry(id: string, opts?: Omit<RetryWorkflowInput, 'id'>): Promise<Workflow>;
    /** Pauses the workflow: it does not run until resumed. */
    pause(id: string, opts?: Omit<WorkflowActionInput, 'id'>): Promise<Workflow>;
    /** Resumes a paused workflow. */
    resume(id: string, opts?: Omit<WorkflowActionInput, 'id'>): Promise<Workflow>;
    /** Cancels the workflow. */
    cancel(id: string, opts?: Omit<WorkflowActionInput, 'id'>): Promise<Workflow>;
    /**
     * The change events of the workflows matching filter, in commit order, over Server-Sent Events:
     * every event after the cursor `after`, or, without it, those from now on. A dropped connection,
     * or an end for a subscriber too slow to keep up, is followed by a new subscription from the
     * last event's cursor: nothing is missed or repeated. The first connection's failure is thrown.
     * Leaving the loop (break) closes the stream.
     */
    events(opts?: {
        filter?: WorkflowFilter;
        after?: string;
        fields?: string;
        signal?: AbortSignal;
    }): AsyncGenerator<WorkflowEvent>;
}
