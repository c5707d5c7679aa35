/**
 * An error cairn answered with. `code` is its extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT,
 * FORBIDDEN, UNAUTHENTICATED...), `field` the input field at fault (extensions.field) when there is
 * one; `errors` holds every error of the answer.
 */
export class CairnError extends Error {
    code;
    field;
    extensions;
    errors;
    constructor(message, opts = {}) {
        super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
        this.name = 'CairnError';
        this.code = opts.code;
        this.field = opts.field;
        this.extensions = opts.extensions ?? {};
        this.errors = opts.errors ?? [];
    }
    /** The error for the errors of an answer (named after the first). */
    static fromErrors(errors) {
        const first = errors[0] ?? { message: 'cairn answered with an error' };
        const ext = first.extensions ?? {};
        const message = ext.code ? `${ext.code}: ${first.message}` : first.message;
        return new CairnError(message, { code: ext.code, field: ext.field, extensions: ext, errors });
    }
    /** True for CONFLICT: for a task, its lease is lost and the worker drops it. */
    get conflict() {
        return this.code === 'CONFLICT';
    }
}
/**
 * cairn could not be reached at the client's URL, or what answered there is not cairn's GraphQL
 * endpoint. Its message names the URL.
 */
export class ConnectionFailed extends CairnError {
    constructor(message, cause) {
        super(message, { cause });
        this.name = 'ConnectionFailed';
    }
}
/**
 * Thrown by a worker's function to fail its task with these problem details. `retryable: false`
 * (the default) fails the calling step at once (a Serverless Workflow try can catch the problem);
 * `retryable: true` runs the step again under its retry policy. Anything else a function throws
 * fails the task as retryable, titled with the error's name, its message as the detail.
 */
export class Problem extends Error {
    title;
    detail;
    status;
    type;
    retryable;
    constructor(opts = {}) {
        super(opts.detail ?? opts.title ?? 'Task Failed');
        this.name = 'Problem';
        this.title = opts.title ?? 'Task Failed';
        this.detail = opts.detail;
        this.status = opts.status ?? 500;
        this.type = opts.type;
        this.retryable = opts.retryable ?? false;
    }
    /** The TaskErrorInput of failTask. */
    toInput() {
        const out = { title: this.title, status: this.status };
        if (this.detail !== undefined)
            out.detail = this.detail;
        if (this.type !== undefined)
            out.type = this.type;
        return out;
    }
    /** The problem for what a function threw: a Problem as it is, anything else as retryable. */
    static from(err) {
        if (err instanceof Problem)
            return err;
        if (err instanceof Error) {
            const title = err.constructor?.name && err.constructor.name !== 'Error' ? err.constructor.name : err.name;
            return new Problem({ title, detail: err.message || String(err), status: 500, retryable: true });
        }
        return new Problem({ title: 'Error', detail: String(err), status: 500, retryable: true });
    }
}
