/** One error of a GraphQL answer, as cairn sends it. */
export interface GraphQLErrorItem {
    message: string;
    path?: (string | number)[];
    extensions?: {
        code?: string;
        field?: string;
        [key: string]: unknown;
    };
}
/**
 * An error cairn answered with. `code` is its extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT,
 * FORBIDDEN, UNAUTHENTICATED...), `field` the input field at fault (extensions.field) when there is
 * one; `errors` holds every error of the answer.
 */
export declare class CairnError extends Error {
    readonly code?: string;
    readonly field?: string;
    readonly extensions: Record<string, unknown>;
    readonly errors: GraphQLErrorItem[];
    constructor(message: string, opts?: {
        code?: string;
        field?: string;
        extensions?: Record<string, unknown>;
        errors?: GraphQLErrorItem[];
        cause?: unknown;
    });
    /** The error for the errors of an answer (named after the first). */
    static fromErrors(errors: GraphQLErrorItem[]): CairnError;
    /** True for CONFLICT: for a task, its lease is lost and the worker drops it. */
    get conflict(): boolean;
}
/**
 * cairn could not be reached at the client's URL, or what answered there is not cairn's GraphQL
 * endpoint. Its message names the URL.
 */
export declare class ConnectionFailed extends CairnError {
    constructor(message: string, cause?: unknown);
}
/** The problem details of a failed task (RFC 7807), as failTask takes them. */
export interface ProblemDetails {
    type?: string;
    status?: number;
    title?: string;
    detail?: string;
}
/**
 * Thrown by a worker's function to fail its task with these problem details. `retryable: false`
 * (the default) fails the calling step at once (a Serverless Workflow try can catch the problem);
 * `retryable: true` runs the step again under its retry policy. Anything else a function throws
 * fails the task as retryable, titled with the error's name, its message as the detail.
 */
export declare class Problem extends Error {
    readonly title: string;
    readonly detail?: string;
    readonly status: number;
    readonly type?: string;
    readonly retryable: boolean;
    constructor(opts?: {
        title?: string;
        detail?: string;
        status?: number;
        type?: string;
        retryable?: boolean;
    });
    /** The TaskErrorInput of failTask. */
    toInput(): ProblemDetails;
    /** The problem for what a function threw: a Problem as it is, anything else as retryable. */
    static from(err: unknown): Problem;
}
