import { CairnError, ConnectionFailed, type GraphQLErrorItem } from './errors.js';

interface Answer {
  data?: Record<string, unknown> | null;
  errors?: GraphQLErrorItem[];
}

/** Posts GraphQL requests (fetch, kept-alive connections) and reads Server-Sent Events streams. */
export class Transport {
  readonly url: string;
  private readonly headers: Record<string, string>;

  constructor(url: string, token?: string) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ConnectionFailed(`not a URL: ${JSON.stringify(url)} (cairn's endpoint is http://host:port/graphql)`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new ConnectionFailed(`not an http(s) URL: ${JSON.stringify(url)} (cairn's endpoint is http://host:port/graphql)`);
    }
    this.url = url;
    this.headers = { 'Content-Type': 'application/json', Accept: 'application/json' };
    if (token) this.headers.Authorization = `Bearer ${token}`;
  }

  private async post(body: string, accept: string | undefined, signal?: AbortSignal, extra?: Record<string, string>): Promise<Response> {
    const headers = { ...this.headers, ...extra };
    if (accept) headers.Accept = accept;
    try {
      return await fetch(this.url, { method: 'POST', headers, body, signal });
    } catch (e) {
      if (signal?.aborted) throw e;
      const cause = (e as { cause?: { message?: string } }).cause;
      throw new ConnectionFailed(`cannot reach cairn at ${this.url}: ${cause?.message ?? (e as Error).message}`, e);
    }
  }

  private async decode(resp: Response): Promise<Record<string, unknown>> {
    const type = resp.headers.get('Content-Type') ?? '';
    let answer: Answer | undefined;
    let text: string;
    try {
      text = await resp.text();
    } catch (e) {
      throw new ConnectionFailed(`lost the answer from ${this.url}: ${(e as Error).message}`, e);
    }
    if (type.includes('json')) {
      try {
        answer = JSON.parse(text) as Answer;
      } catch {
        answer = undefined;
      }
    }
    if (!answer || typeof answer !== 'object' || (!('data' in answer) && !('errors' in answer))) {
      throw new ConnectionFailed(`${this.url} is not cairn's GraphQL endpoint: it answered HTTP ${resp.status} (${type || 'no content type'})`);
    }
    if (answer.errors?.length) throw CairnError.fromErrors(answer.errors);
    return answer.data ?? {};
  }

  /** Sends one operation and returns its data; CairnError for an error in the answer. */
  async request<T = Record<string, unknown>>(query: string, variables?: Record<string, unknown>, signal?: AbortSignal): Promise<T> {
    return this.requestBody<T>(JSON.stringify({ query, variables: variables ?? {} }), signal);
  }

  /** request with the JSON request already encoded. */
  async requestBody<T = Record<string, unknown>>(body: string, signal?: AbortSignal): Promise<T> {
    const resp = await this.post(body, undefined, signal);
    return (await this.decode(resp)) as T;
  }

  /**
   * Subscribes over Server-Sent Events and yields each event's id and data until the stream
   * completes. A GraphQL error in an event is thrown as CairnError; a lost connection, or silence
   * longer than silenceMs (cairn pings every 20 s by default), as ConnectionFailed. onOpen runs once
   * the stream is accepted.
   */
  async *stream(query: string, variables: Record<string, unknown>, opts: { signal?: AbortSignal; silenceMs?: number; lastEventId?: string; onOpen?: () => void } = {}): AsyncGenerator<{ id?: string; data: Record<string, unknown> }> {
    const ctl = new AbortController();
    const outer = opts.signal;
    const onAbort = () => ctl.abort(outer?.reason);
    if (outer?.aborted) ctl.abort(outer.reason);
    outer?.addEventListener('abort', onAbort);
    let silent = false;
    const silenceMs = opts.silenceMs ?? 60000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => { silent = true; ctl.abort(); }, silenceMs);
    };
    try {
      arm();
      const resp = await this.post(JSON.stringify({ query, variables }), 'text/event-stream', ctl.signal,
        opts.lastEventId ? { 'Last-Event-ID': opts.lastEventId } : undefined);
      if (!(resp.headers.get('Content-Type') ?? '').includes('text/event-stream')) {
        await this.decode(resp);
        throw new ConnectionFailed(`${this.url} answered HTTP ${resp.status} without an event stream`);
      }
      opts.onOpen?.();
      const reader = resp.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      let event = 'message';
      let id: string | undefined;
      let data: string[] = [];
      for (;;) {
        let chunk: ReadableStreamReadResult<string>;
        try {
          chunk = await reader.read();
        } catch (e) {
          if (outer?.aborted) return;
          throw new ConnectionFailed(silent ? `no word from cairn at ${this.url} for ${silenceMs} ms` : `lost the stream from ${this.url}: ${(e as Error).message}`, e);
        }
        if (chunk.done) throw new ConnectionFailed(`the stream from ${this.url} ended early`);
        arm();
        buffer += chunk.value;
        let nl: number;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, nl).replace(/\r$/, '');
          buffer = buffer.slice(nl + 1);
          if (line === '') {
            if (event === 'complete') return;
            if (data.length) {
              const payload = JSON.parse(data.join('\n')) as Answer;
              if (payload.errors?.length) throw CairnError.fromErrors(payload.errors);
              yield { id, data: payload.data ?? {} };
            }
            event = 'message';
            id = undefined;
            data = [];
          } else if (!line.startsWith(':')) {
            const colon = line.indexOf(':');
            const name = colon < 0 ? line : line.slice(0, colon);
            let value = colon < 0 ? '' : line.slice(colon + 1);
            if (value.startsWith(' ')) value = value.slice(1);
            if (name === 'event') event = value;
            else if (name === 'id') id = value;
            else if (name === 'data') data.push(value);
          }
        }
      }
    } catch (e) {
      if (silent && !(e instanceof CairnError)) throw new ConnectionFailed(`no word from cairn at ${this.url} for ${silenceMs} ms`, e);
      throw e;
    } finally {
      if (timer) clearTimeout(timer);
      outer?.removeEventListener('abort', onAbort);
      ctl.abort();
    }
  }
}
