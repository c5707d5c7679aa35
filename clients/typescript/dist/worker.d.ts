import type { Client } from './client.js';
/** Tasks run at once by default; each poll asks for the free ones. */
export declare const DEFAULT_CONCURRENCY = 100;
/** Polls in flight at once by default: one is answered while another waits. */
export declare const DEFAULT_POLLERS = 2;
/** The most tasks one poll leases (cairn's limit). */
export declare const MAX_POLL = 100;
/** The most outputs one completeTasks request carries (cairn's limit). */
export declare const MAX_COMPLETE_BATCH = 500;
/** A leased task, as its function gets it. */
export interface Task {
    id: string;
    token: string;
    function: string;
    input: unknown;
    attempt: number;
    deadline: string;
    workflowId?: string;
    /** Aborted when a heartbeat finds the lease lost: the output will not be written. */
    signal: AbortSignal;
}
/** A function a worker serves: the task's input in, its output (a JSON value) out. */
export type TaskFunction = (input: any, task: Task) => unknown | Promise<unknown>;
export interface WorkerOptions {
    /** The functions served, by name. */
    functions: Record<string, TaskFunction>;
    /** How many tasks run at once (default 100). */
    concurrency?: number;
    /** How many polls may be in flight at once (default 2). */
    pollers?: number;
    /** Each lease's length in ms (default 30000); heartbeats renew it every third of it. */
    leaseMs?: number;
    /** How long one poll waits for tasks, in ms (default 20000). */
    waitMs?: number;
    /** The worker's name in cairn (host-pid by default). */
    name?: string;
    /** Told of errors the worker goes on after (a failed poll, a lost lease); console.warn by default. */
    onError?: (message: string, err?: unknown) => void;
}
/**
 * Serves functions for cairn's remote tasks: long polls for them, runs them (concurrency at
 * once), heartbeats the long ones, and ends them: outputs in batches (completeTasks), failures as
 * Problems (failTask). A task's token is ended at most once; one whose lease was lost (CONFLICT)
 * is dropped. A function that throws Problem fails its task with those details; anything else it
 * throws fails it as retryable, titled with the error's class name, and the worker goes on.
 */
export declare class Worker {
    readonly client: Client;
    readonly name: string;
    /** Counts: tasks completed, failed, and dropped (lease lost). */
    readonly stats: {
        completed: number;
        failed: number;
        dropped: number;
    };
    private readonly functions;
    private readonly names;
    private readonly concurrency;
    private readonly pollers;
    private readonly leaseMs;
    private readonly waitMs;
    private readonly onError;
    private free;
    private readonly held;
    private readonly running;
    private ends;
    private unsent;
    private stopping;
    private started;
    private readonly pollAborts;
    private wakers;
    private wakeCompleter?;
    private pollLoops;
    private completeLoop?;
    private beatTimer?;
    constructor(client: Client, opts: WorkerOptions);
    /**
     * Polls once (a wrong URL or token rejects here), then serves in the background until stop().
     */
    start(): Promise<void>;
    /** Stops polling, runs the tasks the worker holds to their end, writes their results, and resolves. */
    stop(): Promise<void>;
    /** Wakes the pollers waiting for free slots. */
    private wake;
    private poll;
    private runPoller;
    private dispatch;
    private run;
    private runCompleter;
    private release;
    private complete;
    private completeOne;
    private fail;
    private lost;
    /** send, again after a connection failure, for as long as the task's lease may hold (its fenced token makes a repeat harmless). */
    private retrying;
    private heartbeats;
}
