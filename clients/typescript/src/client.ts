import { CairnError, ConnectionFailed } from './errors.js';
import type {
  RetryWorkflowInput,
  SignalWorkflowInput,
  StartWorkflowInput,
  Workflow as WorkflowType,
  WorkflowActionInput,
  WorkflowEvent as WorkflowEventType,
  WorkflowFilter,
  WorkflowStatus,
} from './generated/graphql.js';
import { Transport } from './transport.js';

/** The fields of a workflow the client reads. */
export const WORKFLOW_FIELDS =
  'id type definitionVersion externalId businessKey status state stateText retries waitingForSignal lastError input variables output created modified started finished';

/** A workflow as the client returns it: the fields of WORKFLOW_FIELDS. */
export type Workflow = Pick<WorkflowType,
  'id' | 'type' | 'definitionVersion' | 'externalId' | 'businessKey' | 'status' | 'state' | 'stateText' | 'retries' |
  'waitingForSignal' | 'lastError' | 'input' | 'variables' | 'output' | 'created' | 'modified' | 'started' | 'finished'>;

/** A change event of workflowEvents, with the default fields. */
export type WorkflowEvent = Pick<WorkflowEventType, 'cursor' | 'type' | 'at' | 'status' | 'state' | 'workflowId'>;

/** The statuses in which a workflow has ended. */
export const ENDED: readonly WorkflowStatus[] = ['FINISHED', 'FAILED', 'CANCELLED'];

/** The options of startWorkflow: StartWorkflowInput without its type. */
export type StartOptions = Omit<StartWorkflowInput, 'type'>;

export interface ClientOptions {
  /** cairn's GraphQL endpoint, such as http://127.0.0.1:8080/graphql. */
  url: string;
  /** An API token, when cairn runs with --auth. */
  token?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A connection to one cairn endpoint. The first call to a wrong URL rejects with ConnectionFailed,
 * with a wrong token with CairnError code UNAUTHENTICATED; an operation cairn refuses rejects with
 * CairnError and its code and field.
 */
export class Client {
  readonly url: string;
  /** @internal */
  readonly transport: Transport;

  constructor(opts: ClientOptions) {
    this.url = opts.url;
    this.transport = new Transport(opts.url, opts.token);
  }

  /** Runs any query or mutation and returns its data. */
  graphql<T = Record<string, unknown>>(query: string, variables?: Record<string, unknown>, signal?: AbortSignal): Promise<T> {
    return this.transport.request<T>(query, variables, signal);
  }

  /**
   * Starts a workflow of a registered type and returns it. Starting again with the same
   * externalId or idempotencyKey returns the workflow already started.
   */
  async startWorkflow(type: string, opts: StartOptions = {}): Promise<Workflow> {
    const input: StartWorkflowInput = { ...opts, type };
    const data = await this.graphql<{ startWorkflow: { workflow: Workflow } }>(
      `mutation($in: StartWorkflowInput!) { startWorkflow(input: $in) { workflow { ${WORKFLOW_FIELDS} } } }`, { in: input });
    return data.startWorkflow.workflow;
  }

  /** The workflow with this ID, or null when there is none. */
  async getWorkflow(id: string): Promise<Workflow | null> {
    const data = await this.graphql<{ workflow: Workflow | null }>(`query($id: ID!) { workflow(id: $id) { ${WORKFLOW_FIELDS} } }`, { id });
    return data.workflow;
  }

  /**
   * Follows the workflow (subscription workflowUpdated over Server-Sent Events) until it has ended
   * (FINISHED, FAILED or CANCELLED) and returns it. Rejects with a TimeoutError (name
   * 'TimeoutError') when it has not ended within timeoutMs, with CairnError NOT_FOUND when there is
   * no such workflow.
   */
  async wait(id: string, opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<Workflow> {
    const query = `subscription($id: ID!) { workflowUpdated(id: $id) { ${WORKFLOW_FIELDS} } }`;
    // The timeout aborts the stream itself: events and cairn's pings keep a stream alive, so a
    // deadline checked only between streams would never come while the workflow runs on.
    const ctl = new AbortController();
    const onAbort = () => ctl.abort(opts.signal?.reason);
    if (opts.signal?.aborted) ctl.abort(opts.signal.reason);
    opts.signal?.addEventListener('abort', onAbort);
    let timedOut = false;
    const timer = opts.timeoutMs === undefined ? undefined : setTimeout(() => { timedOut = true; ctl.abort(); }, opts.timeoutMs);
    let connected = false;
    let last = 'not yet seen';
    const check = () => {
      if (timedOut) {
        const err = new Error(`workflow ${id} did not end within ${opts.timeoutMs} ms (last seen ${last})`);
        err.name = 'TimeoutError';
        throw err;
      }
      if (opts.signal?.aborted) throw opts.signal.reason;
    };
    try {
      for (;;) {
        check();
        try {
          for await (const { data } of this.transport.stream(query, { id }, {
            signal: ctl.signal, silenceMs: 60000, onOpen: () => { connected = true; },
          })) {
            const wf = (data as { workflowUpdated: Workflow }).workflowUpdated;
            if (ENDED.includes(wf.status)) return wf;
            last = wf.status;
          }
        } catch (e) {
          check();
          if (!(e instanceof ConnectionFailed) || !connected) throw e;
        }
        check();
        await sleep(200); // dropped or silent: subscribe again (it starts with the workflow as it is)
      }
    } finally {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    }
  }

  private async operation(name: string, inputType: string, input: object): Promise<Workflow> {
    const data = await this.graphql<Record<string, { workflow: Workflow }>>(
      `mutation($in: ${inputType}!) { ${name}(input: $in) { workflow { ${WORKFLOW_FIELDS} } } }`, { in: input });
    return data[name]!.workflow;
  }

  /** Sends the signal name with a payload to the workflow. */
  signal(id: string, name: string, opts: Omit<SignalWorkflowInput, 'id' | 'name'> = {}): Promise<Workflow> {
    return this.operation('signalWorkflow', 'SignalWorkflowInput', { ...opts, id, name });
  }

  /** Runs a MANUAL or FAILED workflow again (from opts.state, else the state that failed). */
  retry(id: string, opts: Omit<RetryWorkflowInput, 'id'> = {}): Promise<Workflow> {
    return this.operation('retryWorkflow', 'RetryWorkflowInput', { ...opts, id });
  }

  /** Pauses the workflow: it does not run until resumed. */
  pause(id: string, opts: Omit<WorkflowActionInput, 'id'> = {}): Promise<Workflow> {
    return this.operation('pauseWorkflow', 'WorkflowActionInput', { ...opts, id });
  }

  /** Resumes a paused workflow. */
  resume(id: string, opts: Omit<WorkflowActionInput, 'id'> = {}): Promise<Workflow> {
    return this.operation('resumeWorkflow', 'WorkflowActionInput', { ...opts, id });
  }

  /** Cancels the workflow. */
  cancel(id: string, opts: Omit<WorkflowActionInput, 'id'> = {}): Promise<Workflow> {
    return this.operation('cancelWorkflow', 'WorkflowActionInput', { ...opts, id });
  }

  /**
   * The change events of the workflows matching filter, in commit order, over Server-Sent Events:
   * every event after the cursor `after`, or, without it, those from now on. A dropped connection,
   * or an end for a subscriber too slow to keep up, is followed by a new subscription from the
   * last event's cursor: nothing is missed or repeated. The first connection's failure is thrown.
   * Leaving the loop (break) closes the stream.
   */
  async *events(opts: { filter?: WorkflowFilter; after?: string; fields?: string; signal?: AbortSignal } = {}): AsyncGenerator<WorkflowEvent> {
    let fields = opts.fields ?? 'cursor type at status state workflowId';
    if (!fields.split(/\s+/).includes('cursor')) fields = `cursor ${fields}`;
    const query = `subscription($f: WorkflowFilter, $after: String) { workflowEvents(filter: $f, after: $after) { ${fields} } }`;
    let cursor = opts.after;
    let connected = false;
    let delay = 200;
    for (;;) {
      try {
        for await (const { data } of this.transport.stream(query, { f: opts.filter ?? null, after: cursor ?? null }, {
          signal: opts.signal, onOpen: () => { connected = true; delay = 200; },
        })) {
          const event = (data as { workflowEvents: WorkflowEvent }).workflowEvents;
          cursor = event.cursor;
          yield event;
        }
      } catch (e) {
        if (opts.signal?.aborted) return;
        if (e instanceof CairnError && e.code === 'SLOW_SUBSCRIBER') {
          cursor = (e.extensions.cursor as string | undefined) ?? cursor;
        } else if (!(e instanceof ConnectionFailed) || !connected) {
          throw e;
        }
      }
      if (opts.signal?.aborted) return;
      await sleep(delay);
      delay = Math.min(delay * 2, 5000);
    }
  }
}
