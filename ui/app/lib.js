// What every page shares: htm bound to Preact, the hash router, formatting, and small components.
import { h } from 'preact';
import { useEffect, useLayoutEffect, useState, useCallback, useRef } from 'preact/hooks';
import htm from 'htm';

export const html = htm.bind(h);

// The route lives in the hash (#/workflows?status=FAILED) so the server serves one page and
// every view, filters included, is a link a person can share or go back to.
export function parseRoute() {
  const raw = location.hash.replace(/^#/, '') || '/workflows';
  const [path, query = ''] = raw.split('?');
  return { path, params: new URLSearchParams(query) };
}

export function href(path, params) {
  const q = params ? new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== '')).toString() : '';
  return '#' + path + (q ? '?' + q : '');
}

export function navigate(path, params) { location.hash = href(path, params).slice(1); }

export function useRoute() {
  const [route, setRoute] = useState(parseRoute());
  useEffect(() => {
    const on = () => setRoute(parseRoute());
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

// fmtTime shows a time in the browser's zone, to the second.
export function fmtTime(t) {
  if (!t) return '';
  const d = new Date(t);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function fmtDuration(from, to) {
  if (!from) return '';
  const ms = (to ? new Date(to) : new Date()) - new Date(from);
  if (ms < 1000) return ms + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
  if (ms < 3600000) return Math.floor(ms / 60000) + ' min ' + Math.round((ms % 60000) / 1000) + ' s';
  return (ms / 3600000).toFixed(1) + ' h';
}

// Time values for datetime-local inputs, and back to RFC 3339 (UTC) for the API.
export function toLocalInput(t) {
  if (!t) return '';
  const d = new Date(t);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
export function fromLocalInput(v) { return v ? new Date(v).toISOString() : null; }

export const Time = ({ t }) => t ? html`<time datetime=${t} title=${t}>${fmtTime(t)}</time>` : html`<span class="muted">—</span>`;
// fmtCount writes a count; an estimate (the database's, above the count it affords to make
// exactly) as "~1.2M".
export function fmtCount(n, estimate) {
  if (!estimate) return String(n);
  const f = (v, unit) => (v >= 100 ? String(Math.round(v)) : v.toFixed(1).replace(/\.0$/, '')) + unit;
  return '~' + (n >= 1e6 ? f(n / 1e6, 'M') : n >= 1e3 ? f(n / 1e3, 'k') : String(n));
}
export const Count = ({ n, estimate }) => estimate
  ? html`<span class="estimate" data-estimate="true" title=${'About ' + n.toLocaleString('en') + ': an estimate by the database'}>${fmtCount(n, true)}</span>`
  : String(n);
export const Status = ({ s }) => html`<span class="status ${s}">${s}</span>`;
export const JSONBlock = ({ v, label }) => html`<pre aria-label=${label}>${v === null || v === undefined ? 'null' : JSON.stringify(v, null, 2)}</pre>`;

// parseJSON reads a text area: empty is null; a syntax error is thrown with a readable message.
export function parseJSON(text, what) {
  if (!text.trim()) return null;
  try { return JSON.parse(text); } catch (e) { throw new Error(what + ' is not valid JSON: ' + e.message); }
}

// Msg shows the outcome of an operation next to its control: an error (role alert) or a note.
export const Msg = ({ m }) => !m ? null : m.error
  ? html`<div class="msg error" role="alert">${m.error}</div>`
  : html`<div class="msg okmsg" role="status">${m.ok}</div>`;

// useOp runs one operation of a control at a time and keeps its outcome for Msg.
export function useOp() {
  const [busy, setBusy] = useState(false);
  const [msg, setMsg] = useState(null);
  const run = useCallback(async (fn) => {
    setBusy(true); setMsg(null);
    try {
      const ok = await fn();
      setMsg(ok ? { ok } : null);
    } catch (e) {
      setMsg({ error: e.describe ? e.describe() : e.message });
    } finally { setBusy(false); }
  }, []);
  return { busy, msg, run, setMsg };
}

// useLoad loads data for a key and reloads on demand; stale answers of an older key are dropped.
export function useLoad(fn, key) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const seq = useRef(0);
  const load = useCallback(async () => {
    const n = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    try {
      const data = await fn();
      if (n === seq.current) setState({ data, error: null, loading: false });
    } catch (e) {
      if (n === seq.current) setState((s) => ({ data: s.data, error: e, loading: false }));
    }
  }, [key]);
  // Started as soon as the component is in the document, not a frame later.
  useLayoutEffect(() => { load(); }, [load]);
  return { ...state, reload: load };
}

export const LoadError = ({ error }) => error ? html`<div class="banner error" role="alert">${error.describe ? error.describe() : error.message}</div>` : null;

export function shortId(id) { return id && id.length > 14 ? id.slice(0, 6) + '…' + id.slice(-6) : id; }

// listPage is the page size of the executors and schedules lists.
export const listPage = 50;

// useCursor keeps the cursors of the pages of a plain list read with first/after: the page shown
// starts after `after` (null: the first page).
export function useCursor() {
  const [stack, setStack] = useState([null]);
  return {
    after: stack[stack.length - 1],
    hasPrev: stack.length > 1,
    next: (id) => setStack((s) => [...s, id]),
    prev: () => setStack((s) => s.slice(0, -1)),
    reset: () => setStack([null]),
  };
}

// firstPage splits a list read with first: listPage + 1 into the page and whether more follow.
export function firstPage(list) { return { items: list.slice(0, listPage), more: list.length > listPage }; }

export const Pager = ({ label, cur, page }) => (cur.hasPrev || page.more) ? html`<nav class="pager" aria-label=${label}>
  <button disabled=${!cur.hasPrev} onClick=${cur.prev}>← Previous ${listPage}</button>
  <button disabled=${!page.more} onClick=${() => cur.next(page.items[page.items.length - 1].id)}>Next ${listPage} →</button>
</nav>` : null;
