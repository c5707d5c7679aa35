/** Posts GraphQL requests (fetch, kept-alive connections) and reads Server-Sent Events streams. */
export declare class Transport {
    readonly url: string;
    private readonly headers;
    constructor(url: string, token?: string);
    private post;
    private decode;
    /** Sends one operation and returns its data; CairnError for an error in the answer. */
    request<T = Record<string, unknown>>(query: string, variables?: Record<string, unknown>, signal?: AbortSignal): Promise<T>;
    /** request with the JSON request already encoded. */
    requestBody<T = Record<string, unknown>>(body: string, signal?: AbortSignal): Promise<T>;
    /**
     * Subscribes over Server-Sent Events and yields each event's id and data until the stream
     * completes. A GraphQL error in an event is thrown as CairnError; a lost connection, or silence
     * longer than silenceMs (cairn pings every 20 s by default), as ConnectionFailed. onOpen runs once
     * the stream is accepted.
     */
    stream(query: string, variables: Record<string, unknown>, opts?: {
        signal?: AbortSignal;
        silenceMs?: number;
        lastEventId?: string;
        onOpen?: () => void;
    }): AsyncGenerator<{
        id?: string;
        data: Record<string, unknown>;
    }>;
}
