import { hostname } from 'node:os';
import { CairnError, ConnectionFailed, Problem } from './errors.js';
/** Tasks run at once by default; each poll asks for the free ones. */
export const DEFAULT_CONCURRENCY = 100;
/** Polls in flight at once by default: one is answered while another waits. */
export const DEFAULT_POLLERS = 2;
/** The most tasks one poll leases (cairn's limit). */
export const MAX_POLL = 100;
/** The most outputs one completeTasks request carries (cairn's limit). */
export const MAX_COMPLETE_BATCH = 500;
const POLL = 'mutation($in: PollTasksInput!) { pollTasks(input: $in) { tasks { id token function input attempt deadline workflow { id } } } }';
const HEARTBEAT = 'mutation($t: String!) { heartbeatTask(input: {token: $t}) { deadline } }';
const COMPLETE_MANY = 'mutation($r: [CompleteTaskInput!]!) { completeTasks(input: {results: $r}) { results { id status code } } }';
const COMPLETE_ONE = 'mutation($t: String!, $o: JSON) { completeTask(input: {token: $t, output: $o}) { id status } }';
const FAIL = 'mutation($t: String!, $e: TaskErrorInput!, $r: Boolean) { failTask(input: {token: $t, error: $e, retryable: $r}) { id status } }';
/**
 * Serves functions for cairn's remote tasks: long polls for them, runs them (concurrency at
 * once), heartbeats the long ones, and ends them: outputs in batches (completeTasks), failures as
 * Problems (failTask). A task's token is ended at most once; one whose lease was lost (CONFLICT)
 * is dropped. A function that throws Problem fails its task with those details; anything else it
 * throws fails it as retryable, titled with the error's class name, and the worker goes on.
 */
export class Worker {
    client;
    name;
    /** Counts: tasks completed, failed, and dropped (lease lost). */
    stats = { completed: 0, failed: 0, dropped: 0 };
    functions;
    names;
    concurrency;
    pollers;
    leaseMs;
    waitMs;
    onError;
    free = 0;
    held = new Map();
    running = new Set();
    ends = [];
    unsent = 0;
    stopping = false;
    started = false;
    pollAborts = new Set();
    wakers = [];
    wakeCompleter;
    pollLoops = [];
    completeLoop;
    beatTimer;
    constructor(client, opts) {
        this.client = client;
        this.functions = { ...opts.functions };
        this.names = Object.keys(this.functions).sort();
        if (this.names.length === 0)
            throw new Error('Worker needs at least one function');
        this.concurrency = opts.concurrency ?? DEFAULT_CONCURRENCY;
        this.pollers = Math.min(opts.pollers ?? DEFAULT_POLLERS, this.concurrency);
        if (this.concurrency < 1 || this.pollers < 1)
            throw new Error('concurrency and pollers must be at least 1');
        this.leaseMs = opts.leaseMs ?? 30000;
        this.waitMs = opts.waitMs ?? 20000;
        this.name = opts.name ?? `${hostname()}-${process.pid}`;
        this.onError = opts.onError ?? ((message, err) => console.warn(`cairn worker ${this.name}: ${message}`, err ?? ''));
    }
    /**
     * Polls once (a wrong URL or token rejects here), then serves in the background until stop().
     */
    async start() {
        if (this.started)
            throw new Error('the worker is already started');
        this.started = true;
        this.stopping = false;
        this.free = this.concurrency;
        let first;
        try {
            first = await this.poll(0, Math.min(this.concurrency, MAX_POLL));
        }
        catch (e) {
            this.started = false;
            throw e;
        }
        this.beatTimer = setInterval(() => this.heartbeats(), Math.max(50, Math.min(1000, this.leaseMs / 6)));
        this.completeLoop = this.runCompleter();
        this.free -= first.length;
        for (const t of first)
            this.dispatch(t);
        this.pollLoops = Array.from({ length: this.pollers }, () => this.runPoller());
    }
    /** Stops polling, runs the tasks the worker holds to their end, writes their results, and resolves. */
    async stop() {
        if (!this.started)
            return;
        this.stopping = true;
        for (const a of this.pollAborts)
            a.abort();
        this.wake();
        await Promise.all(this.pollLoops);
        while (this.running.size)
            await Promise.all([...this.running]);
        this.wakeCompleter?.();
        await this.completeLoop;
        clearInterval(this.beatTimer);
        this.started = false;
    }
    /** Wakes the pollers waiting for free slots. */
    wake() {
        const wakers = this.wakers;
        this.wakers = [];
        for (const w of wakers)
            w();
    }
    async poll(waitMs, max) {
        const abort = new AbortController();
        this.pollAborts.add(abort);
        try {
            const data = await this.client.transport.request(POLL, {
                in: { functions: this.names, max, waitMs, leaseMs: this.leaseMs, worker: this.name },
            }, abort.signal);
            const now = Date.now();
            return data.pollTasks.tasks.map((raw) => {
                const ctl = new AbortController();
                const task = {
                    id: raw.id, token: raw.token, function: raw.function, input: raw.input, attempt: raw.attempt,
                    deadline: raw.deadline, workflowId: raw.workflow?.id, signal: ctl.signal,
                };
                this.held.set(task.token, { task, abort: ctl, nextBeat: now + this.leaseMs / 3, beating: false, lost: false });
                return task;
            });
        }
        finally {
            this.pollAborts.delete(abort);
        }
    }
    async runPoller() {
        while (!this.stopping) {
            if (this.free === 0 || this.unsent >= MAX_COMPLETE_BATCH) {
                await new Promise((resolve) => { this.wakers.push(resolve); });
                continue;
            }
            const n = Math.min(this.free, MAX_POLL);
            this.free -= n;
            let tasks;
            try {
                tasks = await this.poll(this.waitMs, n);
            }
            catch (e) {
                this.free += n;
                if (this.stopping)
                    return;
                this.onError('poll failed; retrying in a second', e);
                await new Promise((resolve) => { this.wakers.push(resolve); setTimeout(resolve, 1000); });
                continue;
            }
            this.free += n - tasks.length;
            for (const t of tasks)
                this.dispatch(t);
        }
    }
    dispatch(task) {
        const p = this.run(task).finally(() => {
            this.running.delete(p);
            this.free++;
            this.wake();
        });
        this.running.add(p);
    }
    async run(task) {
        const held = this.held.get(task.token);
        let end;
        try {
            const fn = this.functions[task.function];
            if (!fn)
                throw new Problem({ title: 'Unknown Function', detail: `this worker has no function ${JSON.stringify(task.function)}` });
            const output = await fn(task.input, task);
            let raw;
            try {
                raw = JSON.stringify(output ?? null);
            }
            catch (e) {
                throw new Problem({ title: 'Output Not JSON', detail: `the output of ${task.function} is not a JSON value: ${e.message}` });
            }
            end = { held, output: raw };
        }
        catch (e) {
            end = { held, problem: Problem.from(e) };
        }
        this.ends.push(end);
        this.unsent++;
        this.wakeCompleter?.();
    }
    async runCompleter() {
        for (;;) {
            if (this.ends.length === 0) {
                if (this.stopping && this.running.size === 0)
                    return;
                await new Promise((resolve) => { this.wakeCompleter = resolve; });
                this.wakeCompleter = undefined;
                continue;
            }
            const batch = this.ends;
            this.ends = [];
            const oks = [];
            const fails = [];
            for (const e of batch)
                ('output' in e ? oks : fails).push(e);
            for (let i = 0; i < oks.length; i += MAX_COMPLETE_BATCH)
                await this.complete(oks.slice(i, i + MAX_COMPLETE_BATCH));
            for (const f of fails)
                await this.fail(f.held, f.problem);
            this.unsent -= batch.length;
            this.wake();
        }
    }
    release(held) {
        this.held.delete(held.task.token);
    }
    async complete(oks) {
        const live = oks.filter((o) => !o.held.lost);
        this.stats.dropped += oks.length - live.length;
        if (live.length) {
            const results = live.map((o) => `{"token":${JSON.stringify(o.held.task.token)},"output":${o.output}}`).join(',');
            const body = `{"query":${JSON.stringify(COMPLETE_MANY)},"variables":{"r":[${results}]}}`;
            try {
                const data = await this.retrying(() => this.client.transport.requestBody(body), live[0].held);
                if (data) {
                    data.completeTasks.results.forEach((item, i) => {
                        if (item.code)
                            this.lost(live[i].held, item.code);
                        else
                            this.stats.completed++;
                    });
                }
            }
            catch (e) {
                // Refused as a whole (one bad output): each one alone, so the others are written.
                this.onError('completeTasks refused; completing one by one', e);
                for (const o of live)
                    await this.completeOne(o.held, o.output);
            }
        }
        for (const o of oks)
            this.release(o.held);
    }
    async completeOne(held, output) {
        try {
            await this.retrying(() => this.client.graphql(COMPLETE_ONE, { t: held.task.token, o: JSON.parse(output) }), held);
            this.stats.completed++;
        }
        catch (e) {
            if (e instanceof CairnError && e.conflict)
                this.lost(held, e.code);
            else
                await this.fail(held, new Problem({ title: 'Output Refused', detail: e.message }));
        }
    }
    async fail(held, problem) {
        if (held.lost) {
            this.stats.dropped++;
        }
        else {
            try {
                await this.retrying(() => this.client.graphql(FAIL, { t: held.task.token, e: problem.toInput(), r: problem.retryable }), held);
                this.stats.failed++;
            }
            catch (e) {
                if (e instanceof CairnError && e.conflict)
                    this.lost(held, e.code);
                else
                    this.onError(`failTask for ${held.task.function} ${held.task.id} refused`, e);
            }
        }
        this.release(held);
    }
    lost(held, code) {
        this.stats.dropped++;
        this.onError(`${held.task.function} ${held.task.id} not written (${code}): its lease was lost`);
    }
    /** send, again after a connection failure, for as long as the task's lease may hold (its fenced token makes a repeat harmless). */
    async retrying(send, held) {
        const giveUp = Date.now() + this.leaseMs;
        let delay = 200;
        for (;;) {
            try {
                return await send();
            }
            catch (e) {
                if (!(e instanceof ConnectionFailed))
                    throw e;
                if (Date.now() + delay > giveUp) {
                    this.onError(`could not end ${held.task.function} ${held.task.id}`, e);
                    return undefined;
                }
                await new Promise((resolve) => setTimeout(resolve, delay));
                delay = Math.min(delay * 2, 2000);
            }
        }
    }
    heartbeats() {
        const now = Date.now();
        for (const held of this.held.values()) {
            if (held.beating || held.lost || held.nextBeat > now)
                continue;
            held.beating = true;
            held.nextBeat = now + this.leaseMs / 3;
            this.client.graphql(HEARTBEAT, { t: held.task.token })
                .catch((e) => {
                if (e instanceof CairnError && e.conflict) {
                    held.lost = true; // another worker may run it now; its result is dropped
                    held.abort.abort(e);
                    this.release(held);
                }
                else {
                    this.onError(`heartbeat for ${held.task.function} ${held.task.id} failed`, e);
                }
            })
                .finally(() => { held.beating = false; });
        }
    }
}
