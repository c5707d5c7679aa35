// The dashboard's only way to the server: the public GraphQL API beside it, over HTTP for
// queries and mutations and over graphql-ws for subscriptions, both with the stored API token.

const endpoint = new URL('../graphql', document.baseURI);
const wsEndpoint = (endpoint.protocol === 'https:' ? 'wss:' : 'ws:') + '//' + endpoint.host + endpoint.pathname;
const tokenKey = 'cairn.apiToken';

// listeners of "the server wants a token" and of the live connection's state.
const authListeners = new Set();
const liveListeners = new Set();

export function getToken() { return localStorage.getItem(tokenKey) || ''; }

export function setToken(t) {
  if (t) localStorage.setItem(tokenKey, t); else localStorage.removeItem(tokenKey);
  // A new token needs a new connection: connection_init carries it.
  if (wsClient) { const old = wsClient; wsClient = null; setLive(null); old.dispose(); }
}

export function onAuthNeeded(fn) { authListeners.add(fn); return () => authListeners.delete(fn); }
export function onLiveChange(fn) { liveListeners.add(fn); return () => liveListeners.delete(fn); }

// APIError is a refused request: message, code (extensions.code) and field (extensions.field).
export class APIError extends Error {
  constructor(errors) {
    super(errors.map((e) => e.message).join('; ') || 'the request failed');
    const ext = (errors[0] && errors[0].extensions) || {};
    this.code = ext.code || '';
    this.field = ext.field || '';
  }
  describe() { return (this.code ? this.code + ': ' : '') + this.message; }
}

function authHeaders() {
  const t = getToken();
  return t ? { Authorization: 'Bearer ' + t } : {};
}

function refused(errors) {
  const err = new APIError(errors);
  if (err.code === 'UNAUTHENTICATED') authListeners.forEach((fn) => fn(err));
  return err;
}

// gql runs a query or mutation and returns its data, or throws an APIError.
export async function gql(query, variables = {}) {
  let res;
  try {
    res = await fetch(endpoint, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/graphql-response+json, application/json', ...authHeaders() },
      body: JSON.stringify({ query, variables }),
    });
  } catch (e) {
    throw new APIError([{ message: 'the server cannot be reached (' + e.message + ')' }]);
  }
  let body;
  try { body = await res.json(); } catch { throw new APIError([{ message: 'HTTP ' + res.status + ' without a GraphQL answer' }]); }
  if (body.errors && body.errors.length) throw refused(body.errors);
  return body.data;
}

let wsClient = null;
let live = null; // null until a page subscribes: no connection is wanted before

function setLive(v) { if (v !== live) { live = v; liveListeners.forEach((fn) => fn(v)); } }
export function isLive() { return live; }

function client() {
  if (!wsClient) {
    // A disposed client may report closed after its successor connected: only the current
    // client's events count.
    const mine = (fn) => (...a) => { if (wsClient === c) fn(...a); };
    const c = window.graphqlWs.createClient({
      url: wsEndpoint,
      lazy: false, // stay connected between pages, so the indicator tells whether live updates arrive
      connectionParams: () => authHeaders(),
      retryAttempts: Infinity,
      shouldRetry: () => true,
      keepAlive: 20000,
      on: { connected: mine(() => setLive(true)), closed: mine(() => setLive(false)) },
    });
    wsClient = c;
  }
  return wsClient;
}

// subscribe starts a subscription; onData gets each event's data. It returns the function that
// ends it.
export function subscribe(query, variables, onData, onError) {
  return client().subscribe({ query, variables }, {
    next: (msg) => {
      if (msg.errors && msg.errors.length) { const e = refused(msg.errors); if (onError) onError(e); return; }
      onData(msg.data);
    },
    error: (e) => { if (onError) onError(e instanceof APIError ? e : Array.isArray(e) ? refused(e) : new APIError([{ message: 'the live connection failed' }])); },
    complete: () => {},
  });
}
