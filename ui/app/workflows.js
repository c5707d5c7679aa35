// The workflows page: a filtered, sorted page of workflows (keyset paging, 50 a page), counts
// by status, live updates from workflowEvents, and bulk operations on a selection.
import { useEffect, useLayoutEffect, useState, useRef, useMemo } from 'preact/hooks';
import { gql, subscribe } from './api.js';
import { html, href, navigate, Time, Status, Count, useLoad, LoadError, fromLocalInput, toLocalInput, shortId } from './lib.js';
import { Bulk } from './bulk.js';
import { AllMatching } from './operations.js';

export const pageSize = 50;
export const statuses = ['CREATED', 'IN_PROGRESS', 'EXECUTING', 'WAITING', 'PAUSED', 'MANUAL', 'FINISHED', 'FAILED', 'CANCELLED'];
const orderFields = ['CREATED', 'MODIFIED', 'NEXT_ACTIVATION', 'PRIORITY'];

// Live events recount at most every statsEvery ms, and no sooner than statsCost times the last
// count took (at least statsSoonest ms): a count of a few ms follows changes within a second or
// two, one of hundreds of ms takes at most about 5% of the database's time.
const statsEvery = 10000;
const statsSoonest = 1000;
const statsCost = 20;
const slowCount = 1000;

// The text fields of the filter form: typed in, applied together with any other change.
const typedFields = ['type', 'state', 'externalId', 'businessKey'];
const levels = { top: 'top-level only', all: 'with children', children: 'children only' };

const rowFields = 'id type status state stateText externalId businessKey created modified nextActivation retries';

const listQuery = `query Workflows($filter: WorkflowFilter, $orderBy: WorkflowOrder, $first: Int, $after: String, $last: Int, $before: String) {
  workflows(filter: $filter, orderBy: $orderBy, first: $first, after: $after, last: $last, before: $before) {
    edges { cursor node { ${rowFields} stuckReason } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}`;
const statsQuery = `query Stats($filter: WorkflowFilter) { workflowStats(filter: $filter) { total totalIsEstimate stuck byStatus { status count isEstimate } } }`;
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
  if (p.get('stuck') === '1') f.stuck = true;
  // Children (sub-workflows, fork branches) stay under their parents: the list shows top-level
  // workflows unless asked for children, or when it lists one workflow's children.
  const level = p.get('level') || 'top';
  if (!p.get('parentId') && level !== 'all') f.topLevel = level === 'top';
  return f;
}

// describeFilter says in words which workflows the route's filter selects, for the bulk actions.
function describeFilter(p) {
  const parts = [];
  const add = (name, label) => { if (p.get(name)) parts.push(label + ' ' + p.get(name)); };
  add('type', 'type'); add('status', 'status'); add('state', 'state');
  add('externalId', 'external ID'); add('businessKey', 'business key');
  if (p.get('from')) parts.push('created after ' + p.get('from'));
  if (p.get('to')) parts.push('created before ' + p.get('to'));
  if (p.get('stuck') === '1') parts.push('stuck only');
  if (p.get('parentId')) parts.push('children of ' + p.get('parentId'));
  else parts.push(levels[p.get('level')] || levels.top);
  return parts.join(' · ');
}

// The subscription leaves out statuses and states: an event of a row on the page that leaves
// them (a WAITING row paused elsewhere) must still reach the page, so its row and the counts
// follow. Such an event is judged here instead, as the server judges it (the event's own status
// and state). A workflow becomes stuck with no event: the subscription never filters by it, and a
// stuck-only page takes no new rows live (its rows keep the reason they were listed with).
function liveFilterOf(f) { const { statuses, states, stuck, ...rest } = f; return rest; }
function eventMatches(f, ev) {
  return (!f.statuses || f.statuses.includes(ev.status)) && (!f.states || f.states.includes(ev.state));
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
  const scope = describeFilter(params);
  // The filter form's draft, applied with any change (a status picked after a type was typed
  // applies both). A new route starts a new draft in the same render, so none outlives its route.
  const route = useRef({ key, n: 0 });
  if (route.current.key !== key) route.current = { key, n: route.current.n + 1 };
  const [drafted, setDrafted] = useState({ n: 0, v: paramsObj(params) });
  const draft = drafted.n === route.current.n ? drafted.v : paramsObj(params);
  const setDraft = (v) => setDrafted({ n: route.current.n, v });

  // rows is the page as shown: the loaded page, updated in place by live events. It is set with
  // the answer itself, so the rows are drawn in the same render as the page arrives.
  const [rows, setRows] = useState([]);
  const [fresh, setFresh] = useState(new Set());
  const [selected, setSelected] = useState(new Set());
  // left: rows on the page that a live change took out of the filter; they stay in place, marked
  // and unselectable, so the page does not shift under the person reading it.
  const [left, setLeft] = useState(new Set());
  const [pending, setPending] = useState(0);
  const [liveError, setLiveError] = useState(false);
  const currentKey = useRef(key);
  currentKey.current = key;
  const list = useLoad(() => gql(listQuery, {
    filter, orderBy: { field: sort, direction: dir },
    ...(before ? { last: pageSize, before } : { first: pageSize, after }),
  }).then((d) => {
    if (currentKey.current === key) { setRows(d.workflows.edges.map((e) => e.node)); setPending(0); setLeft(new Set()); }
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
      .then((d) => {
        const took = performance.now() - t0;
        return { ...d.workflowStats, at: new Date().toISOString(), took, slow: took > slowCount };
      })
      .finally(() => { counting.current = false; });
  }, filterKey + statsWanted);
  const statsSlow = useRef(false);
  statsSlow.current = !!(stats.data && stats.data.slow);
  const statsDelay = useRef(statsEvery);
  statsDelay.current = stats.data ? Math.min(statsEvery, Math.max(statsSoonest, statsCost * stats.data.took)) : statsEvery;
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
      const matches = eventMatches(filter, ev);
      setRows((rs) => {
        const i = rs.findIndex((r) => r.id === w.id);
        if (i >= 0) {
          const next = rs.slice(); next[i] = { ...w, stuckReason: rs[i].stuckReason };
          setLeft((l) => { if (matches === !l.has(w.id)) return l; const n = new Set(l); if (matches) n.delete(w.id); else n.add(w.id); return n; });
          if (!matches) setSelected((s) => { if (!s.has(w.id)) return s; const n = new Set(s); n.delete(w.id); return n; });
          return next;
        }
        if (ev.type === 'CREATED' && matches && !filter.stuck) {
          if (inPlace) return [w, ...rs].slice(0, pageSize);
          setPending((n) => n + 1);
        }
        return rs;
      });
      // Only the latest changes are marked, so a long session does not collect every ID it saw.
      setFresh((s) => { const n = new Set(s).add(w.id); if (n.size > 2 * pageSize) n.delete(n.values().next().value); return n; });
      if (!statsTimer.current && !statsSlow.current) statsTimer.current = setTimeout(function recount() {
        if (counting.current) { statsTimer.current = setTimeout(recount, statsDelay.current); return; }
        statsTimer.current = null;
        reloadStats.current();
      }, statsDelay.current);
    };
    const open = () => {
      unsub = subscribe(eventsSub, { filter: liveFilterOf(filter), ...(cursor ? { after: cursor } : {}) }, onEvent, () => {
        unsub();
        setLiveError(true);
        retry = setTimeout(() => { setLiveError(false); open(); }, 2000);
      });
    };
    open();
    return () => { unsub(); clearTimeout(retry); clearTimeout(statsTimer.current); statsTimer.current = null; };
  }, [filterKey, inPlace]);

  // set applies a change of the filter or order together with what is typed in the form.
  const set = (changes) => {
    const p = { ...paramsObj(params) };
    for (const f of typedFields) p[f] = (draft[f] || '').trim();
    Object.assign(p, changes);
    delete p.after; delete p.before;
    navigate('/workflows', p);
  };
  // turn pages under the applied filter (the cursors belong to it), whatever is typed.
  const turn = (cursor) => navigate('/workflows', { ...paramsObj(params), after: undefined, before: undefined, ...cursor });
  const selectable = rows.filter((r) => !left.has(r.id));

  const page = list.data;
  return html`
    <h1>Workflows</h1>
    <${Filters} params=${params} set=${set} draft=${draft} setDraft=${setDraft} />
    ${params.get('parentId') && html`<p class="banner" role="status">Children of workflow <a href=${href('/workflow', { id: params.get('parentId') })}><code>${shortId(params.get('parentId'))}</code></a>. <button onClick=${() => set({ parentId: '' })}>Show all workflows</button></p>`}
    <${StatusCounts} stats=${stats} params=${params} set=${set} reload=${stats.reload} delay=${statsDelay.current} />
    <${LoadError} error=${list.error} />
    <${Bulk} key=${key} selected=${selected} rows=${rows} scope=${scope} clear=${() => setSelected(new Set())} reload=${list.reload} />
    <${AllMatching} key=${'all' + key} filter=${filter} scope=${scope} />
    ${liveError && html`<div class="banner" role="status">Live updates were interrupted; taking them up again…</div>`}
    ${pending > 0 && html`<div class="banner" role="status">${pending} new workflow${pending > 1 ? 's' : ''} since this page loaded. <button onClick=${() => turn({})}>Show the newest</button></div>`}
    <table aria-label="Workflows" aria-busy=${list.loading ? 'true' : 'false'} data-loaded=${page ? 'true' : 'false'}>
      <thead><tr>
        <th><input type="checkbox" aria-label="Select every workflow of the page"
          checked=${selectable.length > 0 && selected.size === selectable.length}
          onChange=${(e) => setSelected(e.target.checked ? new Set(selectable.map((r) => r.id)) : new Set())} /></th>
        <th>ID</th><th>Type</th><th>Status</th><th>State</th><th>External ID</th><th>Business key</th><th>Created</th><th>Modified</th>
      </tr></thead>
      <tbody>
        ${rows.map((w) => html`<tr key=${w.id} data-id=${w.id} data-left=${left.has(w.id) ? 'true' : null} class=${(fresh.has(w.id) ? 'fresh' : '') + (left.has(w.id) ? ' left' : '')}
          title=${left.has(w.id) ? 'No longer matches the filter: changed since the page loaded' : null}>
          <td><input type="checkbox" aria-label=${'Select workflow ' + w.id} checked=${selected.has(w.id)} disabled=${left.has(w.id)}
            onChange=${(e) => setSelected((s) => { const n = new Set(s); if (e.target.checked) n.add(w.id); else n.delete(w.id); return n; })} /></td>
          <td class="id"><a href=${href('/workflow', { id: w.id })}>${w.id}</a></td>
          <td>${w.type}</td>
          <td><${Status} s=${w.status} />${w.stuckReason ? html` <span class="stuck" data-testid="stuck" title=${w.stuckReason}>stuck</span><div class="muted stuck-reason">${w.stuckReason}</div>` : ''}${left.has(w.id) ? html` <span class="muted">no longer matches the filter</span>` : ''}</td>
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
      <button disabled=${!page.pageInfo.hasPreviousPage && !after} onClick=${() => turn({})}>Newest</button>
      <button disabled=${!page.pageInfo.hasPreviousPage} onClick=${() => turn({ before: page.pageInfo.startCursor })}>← Previous ${pageSize}</button>
      <button disabled=${!page.pageInfo.hasNextPage} onClick=${() => turn({ after: page.pageInfo.endCursor })}>Next ${pageSize} →</button>
    </nav>`}`;
}

function Filters({ params, set, draft: v, setDraft: setV }) {
  // The registered types, offered as the type field's suggestions.
  const types = useLoad(() => gql(`{ workflowDefinitions { type } }`).then((d) => d.workflowDefinitions.map((x) => x.type)), 'types');
  const field = (name, label, props = {}) => html`<label>${label}<input name=${name} value=${v[name] || ''} onInput=${(e) => setV({ ...v, [name]: e.target.value })} ...${props} /></label>`;
  const submit = (e) => {
    e.preventDefault();
    set({});
  };
  const time = (name, label) => html`<label>${label}<input type="datetime-local" name=${name} value=${toLocalInput(params.get(name))}
    onChange=${(e) => set({ [name]: fromLocalInput(e.target.value) || '' })} /></label>`;
  return html`<form class="filters" role="search" aria-label="Filter workflows" onSubmit=${submit}>
    ${field('type', 'Type', { placeholder: 'demo.order', list: 'known-types' })}
    <datalist id="known-types">${(types.data || []).map((t) => html`<option value=${t} />`)}</datalist>
    <label>Status<select aria-label="Status" name="status" value=${params.get('status') || ''} onChange=${(e) => set({ status: e.target.value })}>
      <option value="">any</option>
      ${statuses.map((s) => html`<option value=${s}>${s}</option>`)}
    </select></label>
    ${field('state', 'State')}
    ${field('externalId', 'External ID')}
    ${field('businessKey', 'Business key')}
    ${time('from', 'Created after')}
    ${time('to', 'Created before')}
    <label>Show<select aria-label="Show" name="level" value=${params.get('level') || 'top'} disabled=${!!params.get('parentId')} onChange=${(e) => set({ level: e.target.value === 'top' ? '' : e.target.value })}>
      ${Object.entries(levels).map(([k, label]) => html`<option value=${k}>${label}</option>`)}
    </select></label>
    <label class="check"><input type="checkbox" name="stuck" aria-label="Stuck only" checked=${params.get('stuck') === '1'}
      onChange=${(e) => set({ stuck: e.target.checked ? '1' : '' })} /> Stuck only</label>
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

function StatusCounts({ stats, params, set, reload, delay }) {
  const s = stats.data;
  if (!s || stats.error) return html`<div class="stats muted" aria-live="polite">${stats.error ? 'Counts unavailable: ' + stats.error.message : 'Counting…'}</div>`;
  const current = params.get('status') || '';
  return html`<div class="stats" aria-label="Counts by status" data-total=${s.total} data-total-estimate=${s.totalIsEstimate ? 'true' : 'false'} title=${'Counted at ' + s.at + (s.totalIsEstimate ? '; numbers with ~ are estimates' : '')}>
    <button aria-pressed=${current === '' ? 'true' : 'false'} onClick=${() => set({ status: '' })}>All <strong><${Count} n=${s.total} estimate=${s.totalIsEstimate} /></strong></button>
    ${s.byStatus.map((c) => html`<button data-status=${c.status} aria-pressed=${current === c.status ? 'true' : 'false'} onClick=${() => set({ status: c.status })}>${c.status} <strong><${Count} n=${c.count} estimate=${c.isEstimate} /></strong></button>`)}
    <button data-stuck=${s.stuck} aria-pressed=${params.get('stuck') === '1' ? 'true' : 'false'} title="Workflows that cannot make progress (see each one's reason)"
      onClick=${() => set({ stuck: params.get('stuck') === '1' ? '' : '1' })}>Stuck <strong>${s.stuck}</strong></button>
    <button class="recount" title=${s.slow ? 'Counting is slow here: count again by hand' : 'Live events recount after ' + (delay / 1000).toFixed(1) + ' s'} disabled=${stats.loading} onClick=${reload}>↻ Recount <span class="muted">(counted <${Time} t=${s.at} />)</span></button>
  </div>`;
}
