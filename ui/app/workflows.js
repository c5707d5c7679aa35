// The workflows page: a filtered, sorted page of workflows (keyset paging, 50 a page), counts
// by status, live updates from workflowEvents, and bulk operations on a selection.
import { useEffect, useLayoutEffect, useState, useRef, useMemo } from 'preact/hooks';
import { gql, subscribe } from './api.js';
import { html, href, navigate, Time, Status, Count, useLoad, LoadError, Msg, useOp, fromLocalInput, toLocalInput } from './lib.js';

export const pageSize = 50;
export const statuses = ['CREATED', 'IN_PROGRESS', 'EXECUTING', 'WAITING', 'PAUSED', 'MANUAL', 'FINISHED', 'FAILED', 'CANCELLED'];
const orderFields = ['CREATED', 'MODIFIED', 'NEXT_ACTIVATION', 'PRIORITY'];

const statsEvery = 10000;
const slowCount = 1000;

const rowFields = 'id type status state stateText externalId businessKey created modified nextActivation retries';

const listQuery = `query Workflows($filter: WorkflowFilter, $orderBy: WorkflowOrder, $first: Int, $after: String, $last: Int, $before: String) {
  workflows(filter: $filter, orderBy: $orderBy, first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { ${rowFields} } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}`;
const statsQuery = `query Stats($filter: WorkflowFilter) { workflowStats(filter: $filter) { total totalIsEstimate byStatus { status count isEstimate } } }`;
const eventsSub = `subscription Events($filter: WorkflowFilter, $after: String) { workflowEvents(filter: $filter, after: $after) { cursor type at status state workflowId workflow { ${rowFields} } } }`;

// filterOf turns the route's parameters into a WorkflowFilter.
function filterOf(p) {
  const f = {};
  if (p.get('type')) f.types = p.get('type').split(',').map((s) => s.trim()).filter(Boolean);
  if (p.get('status')) f.statuses = p.get('status').split(',');
  if (p.get('state')) f.states = p.get('state').split(',').map((s) => s.trim()).filter(Boolean);
  if (p.get('externalId')) f.externalId = p.get('externalId');
  if (p.get('businessKey')) f.businessKey = p.get('businessKey');
  if (p.get('parentId')) f.parentId = p.get('parentId');
  if (p.get('from')) f.createdAfter = p.get('from');
  if (p.get('to')) f.createdBefore = p.get('to');
  return f;
}

function paramsObj(p) { return Object.fromEntries(p.entries()); }

export function WorkflowsPage({ params }) {
  const filter = useMemo(() => filterOf(params), [params.toString()]);
  const sort = params.get('sort') || 'CREATED';
  const dir = params.get('dir') || 'DESC';
  const after = params.get('after');
  const before = params.get('before');
  const key = params.toString();
  const filterKey = JSON.stringify(filter);

  // rows is the page as shown: the loaded page, updated in place by live events. It is set with
  // the answer itself, so the rows are drawn in the same render as the page arrives.
  const [rows, setRows] = useState([]);
  const [fresh, setFresh] = useState(new Set());
  const [selected, setSelected] = useState(new Set());
  const [pending, setPending] = useState(0);
  const [liveError, setLiveError] = useState(false);
  const currentKey = useRef(key);
  currentKey.current = key;
  const list = useLoad(() => gql(listQuery, {
    filter, orderBy: { field: sort, direction: dir },
    ...(before ? { last: pageSize, before } : { first: pageSize, after }),
  }).then((d) => {
    if (currentKey.current === key) { setRows(d.workflows.edges.map((e) => e.node)); setPending(0); }
    return d.workflows;
  }), key);
  // Counting scans every matching workflow (seconds at 1M on SQLite, whose one connection the
  // engine shares): the counts load after the page is drawn, live events recount them at most
  // every statsEvery ms and never two counts at once, and a count slower than slowCount is
  // redone only when the person asks.
  const [statsWanted, setStatsWanted] = useState(false);
  const counting = useRef(false);
  const stats = useLoad(() => {
    if (!statsWanted) return Promise.resolve(null);
    counting.current = true;
    const t0 = performance.now();
    return gql(statsQuery, { filter })
      .then((d) => ({ ...d.workflowStats, at: new Date().toISOString(), slow: performance.now() - t0 > slowCount }))
      .finally(() => { counting.current = false; });
  }, filterKey + statsWanted);
  const statsSlow = useRef(false);
  statsSlow.current = !!(stats.data && stats.data.slow);
  const reloadStats = useRef(stats.reload);
  reloadStats.current = stats.reload;

  useLayoutEffect(() => {
    if (list.data) {
      // The page's first render, for the browser test: rows are in the document now.
      if (!window.cairnFirstRender) window.cairnFirstRender = performance.now();
      setStatsWanted(true);
    }
  }, [list.data]);
  useEffect(() => setSelected(new Set()), [key]);

  // New workflows enter the first page in place when it is in creation order, newest first; on
  // any other page or order they are counted and shown on request, so a page never shifts under
  // a person reading it.
  const inPlace = !after && !before && sort === 'CREATED' && dir === 'DESC';
  const statsTimer = useRef(null);
  useEffect(() => {
    // A subscription the server ends with an error (SLOW_SUBSCRIBER, a restart) is taken up
    // again after the last event seen, so no change is missed.
    let cursor = null;
    let unsub = () => {};
    let retry = null;
    const onEvent = (data) => {
      const ev = data.workflowEvents;
      cursor = ev.cursor;
      const w = ev.workflow;
      if (!w) return;
      setRows((rs) => {
        const i = rs.findIndex((r) => r.id === w.id);
        if (i >= 0) { const next = rs.slice(); next[i] = w; return next; }
        if (ev.type === 'CREATED') {
          if (inPlace) return [w, ...rs].slice(0, pageSize);
          setPending((n) => n + 1);
        }
        return rs;
      });
      // Only the latest changes are marked, so a long session does not collect every ID it saw.
      setFresh((s) => { const n = new Set(s).add(w.id); if (n.size > 2 * pageSize) n.delete(n.values().next().value); return n; });
      if (!statsTimer.current && !statsSlow.current) statsTimer.current = setTimeout(function recount() {
        if (counting.current) { statsTimer.current = setTimeout(recount, statsEvery); return; }
        statsTimer.current = null;
        reloadStats.current();
      }, statsEvery);
    };
    const open = () => {
      unsub = subscribe(eventsSub, { filter, ...(cursor ? { after: cursor } : {}) }, onEvent, () => {
        unsub();
        setLiveError(true);
        retry = setTimeout(() => { setLiveError(false); open(); }, 2000);
      });
    };
    open();
    return () => { unsub(); clearTimeout(retry); clearTimeout(statsTimer.current); statsTimer.current = null; };
  }, [filterKey, inPlace]);

  const set = (changes) => {
    const p = { ...paramsObj(params), ...changes };
    delete p.after; delete p.before;
    if (changes.after) p.after = changes.after;
    if (changes.before) p.before = changes.before;
    navigate('/workflows', p);
  };

  const page = list.data;
  return html`
    <h1>Workflows</h1>
    <${Filters} params=${params} set=${set} />
    <${StatusCounts} stats=${stats} params=${params} set=${set} reload=${stats.reload} />
    <${LoadError} error=${list.error} />
    <${Bulk} key=${key} selected=${selected} rows=${rows} clear=${() => setSelected(new Set())} reload=${list.reload} />
    ${liveError && html`<div class="banner" role="status">Live updates were interrupted; taking them up again…</div>`}
    ${pending > 0 && html`<div class="banner" role="status">${pending} new workflow${pending > 1 ? 's' : ''} since this page loaded. <button onClick=${() => set({})}>Show the newest</button></div>`}
    <table aria-label="Workflows" aria-busy=${list.loading ? 'true' : 'false'} data-loaded=${page ? 'true' : 'false'}>
      <thead><tr>
        <th><input type="checkbox" aria-label="Select every workflow of the page"
          checked=${rows.length > 0 && selected.size === rows.length}
          onChange=${(e) => setSelected(e.target.checked ? new Set(rows.map((r) => r.id)) : new Set())} /></th>
        <th>ID</th><th>Type</th><th>Status</th><th>State</th><th>External ID</th><th>Business key</th><th>Created</th><th>Modified</th>
      </tr></thead>
      <tbody>
        ${rows.map((w) => html`<tr key=${w.id} data-id=${w.id} class=${fresh.has(w.id) ? 'fresh' : ''}>
          <td><input type="checkbox" aria-label=${'Select workflow ' + w.id} checked=${selected.has(w.id)}
            onChange=${(e) => setSelected((s) => { const n = new Set(s); if (e.target.checked) n.add(w.id); else n.delete(w.id); return n; })} /></td>
          <td class="id"><a href=${href('/workflow', { id: w.id })}>${w.id}</a></td>
          <td>${w.type}</td>
          <td><${Status} s=${w.status} /></td>
          <td>${w.state}${w.stateText ? html`<div class="muted">${w.stateText}</div>` : ''}</td>
          <td>${w.externalId || ''}</td>
          <td>${w.businessKey || ''}</td>
          <td><${Time} t=${w.created} /></td>
          <td><${Time} t=${w.modified} /></td>
        </tr>`)}
        ${page && rows.length === 0 && html`<tr><td colspan="9" class="muted">No workflow matches.</td></tr>`}
      </tbody>
    </table>
    ${!page && !list.error && html`<p class="loading">Loading…</p>`}
    ${page && html`<nav class="pager" aria-label="Pages">
      <button disabled=${!page.pageInfo.hasPreviousPage && !after} onClick=${() => set({})}>Newest</button>
      <button disabled=${!page.pageInfo.hasPreviousPage} onClick=${() => set({ before: page.pageInfo.startCursor })}>← Previous ${pageSize}</button>
      <button disabled=${!page.pageInfo.hasNextPage} onClick=${() => set({ after: page.pageInfo.endCursor })}>Next ${pageSize} →</button>
    </nav>`}`;
}

function Filters({ params, set }) {
  const [v, setV] = useState(paramsObj(params));
  // The registered types, offered as the type field's suggestions.
  const types = useLoad(() => gql(`{ workflowDefinitions { type } }`).then((d) => d.workflowDefinitions.map((x) => x.type)), 'types');
  useEffect(() => setV(paramsObj(params)), [params.toString()]);
  const field = (name, label, props = {}) => html`<label>${label}<input name=${name} value=${v[name] || ''} onInput=${(e) => setV({ ...v, [name]: e.target.value })} ...${props} /></label>`;
  const submit = (e) => {
    e.preventDefault();
    set({ type: v.type || '', state: v.state || '', externalId: v.externalId || '', businessKey: v.businessKey || '', status: v.status || '' });
  };
  const time = (name, label) => html`<label>${label}<input type="datetime-local" name=${name} value=${toLocalInput(params.get(name))}
    onChange=${(e) => set({ [name]: fromLocalInput(e.target.value) || '' })} /></label>`;
  return html`<form class="filters" role="search" aria-label="Filter workflows" onSubmit=${submit}>
    ${field('type', 'Type', { placeholder: 'demo.order', list: 'known-types' })}
    <datalist id="known-types">${(types.data || []).map((t) => html`<option value=${t} />`)}</datalist>
    <label>Status<select aria-label="Status" name="status" value=${v.status || ''} onChange=${(e) => set({ status: e.target.value })}>
      <option value="">any</option>
      ${statuses.map((s) => html`<option value=${s}>${s}</option>`)}
    </select></label>
    ${field('state', 'State')}
    ${field('externalId', 'External ID')}
    ${field('businessKey', 'Business key')}
    ${time('from', 'Created after')}
    ${time('to', 'Created before')}
    <label>Sort by<select aria-label="Sort by" name="sort" value=${params.get('sort') || 'CREATED'} onChange=${(e) => set({ sort: e.target.value })}>
      ${orderFields.map((f) => html`<option value=${f}>${f.toLowerCase().replace('_', ' ')}</option>`)}
    </select></label>
    <label>Direction<select aria-label="Direction" name="dir" value=${params.get('dir') || 'DESC'} onChange=${(e) => set({ dir: e.target.value })}>
      <option value="DESC">descending</option><option value="ASC">ascending</option>
    </select></label>
    <button type="submit" class="primary">Apply</button>
    <button type="button" onClick=${() => navigate('/workflows')}>Clear</button>
  </form>`;
}

function StatusCounts({ stats, params, set, reload }) {
  const s = stats.data;
  if (!s || stats.error) return html`<div class="stats muted" aria-live="polite">${stats.error ? 'Counts unavailable: ' + stats.error.message : 'Counting…'}</div>`;
  const current = params.get('status') || '';
  return html`<div class="stats" aria-label="Counts by status" data-total=${s.total} data-total-estimate=${s.totalIsEstimate ? 'true' : 'false'} title=${'Counted at ' + s.at + (s.totalIsEstimate ? '; numbers with ~ are estimates' : '')}>
    <button aria-pressed=${current === '' ? 'true' : 'false'} onClick=${() => set({ status: '' })}>All <strong><${Count} n=${s.total} estimate=${s.totalIsEstimate} /></strong></button>
    ${s.byStatus.map((c) => html`<button data-status=${c.status} aria-pressed=${current === c.status ? 'true' : 'false'} onClick=${() => set({ status: c.status })}>${c.status} <strong><${Count} n=${c.count} estimate=${c.isEstimate} /></strong></button>`)}
    <button class="recount" title=${s.slow ? 'Counting is slow here: count again by hand' : 'Live events recount every ' + statsEvery / 1000 + ' s at most'} disabled=${stats.loading} onClick=${reload}>↻ Recount <span class="muted">(counted <${Time} t=${s.at} />)</span></button>
  </div>`;
}

const bulkOps = {
  retry: { label: 'Retry', mutation: 'retryWorkflow', input: 'RetryWorkflowInput', confirm: true },
  pause: { label: 'Pause', mutation: 'pauseWorkflow', input: 'WorkflowActionInput' },
  cancel: { label: 'Cancel', mutation: 'cancelWorkflow', input: 'WorkflowActionInput', confirm: true },
};

// Bulk runs one operation on every selected workflow, each on its own (one refusal does not stop
// the others), and reports what was refused and why.
function Bulk({ selected, rows, clear, reload }) {
  const op = useOp();
  const ids = [...selected];
  const go = (name) => op.run(async () => {
    const o = bulkOps[name];
    if (o.confirm && !confirm(`${o.label} ${ids.length} workflow${ids.length > 1 ? 's' : ''}?${name === 'cancel' ? ' This cannot be undone.' : ''}`)) return null;
    const q = `mutation($input: ${o.input}!) { ${o.mutation}(input: $input) { workflow { id status } } }`;
    const results = await Promise.all(ids.map((id) => gql(q, { input: { id, reason: 'bulk ' + name + ' from the dashboard' } }).then(() => null, (e) => id + ': ' + e.describe())));
    const refused = results.filter(Boolean);
    clear();
    reload();
    if (refused.length) throw new Error(`${ids.length - refused.length} done, ${refused.length} refused — ${refused.join('; ')}`);
    return `${o.label}: ${ids.length} done.`;
  });
  return html`<div class="toolbar" role="group" aria-label="Bulk actions on the selected workflows">
    <span class="muted">${ids.length} selected</span>
    ${Object.entries(bulkOps).map(([name, o]) => html`<button class=${name === 'cancel' ? 'danger' : ''} disabled=${ids.length === 0 || op.busy} onClick=${() => go(name)}>${o.label} selected</button>`)}
    <${Msg} m=${op.msg} />
  </div>`;
}
