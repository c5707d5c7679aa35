// The audit log page: operator acts (bulk operations, deletes, reruns, deploys, release states,
// schedules, tokens), newest first, filtered by actor and time.
import { useState } from 'preact/hooks';
import { gql } from './api.js';
import { html, navigate, Time, useLoad, LoadError, listPage, useCursor, fromLocalInput, toLocalInput, Pager } from './lib.js';

export function AuditPage({ params }) {
  const filter = {};
  for (const k of ['actor', 'since', 'until']) if (params.get(k)) filter[k] = params.get(k);
  const [draft, setDraft] = useState({ actor: filter.actor || '', since: toLocalInput(filter.since), until: toLocalInput(filter.until) });
  const cur = useCursor();
  const key = JSON.stringify(filter) + cur.after;
  const list = useLoad(() => gql(`query($first: Int, $after: String, $filter: AuditLogFilter) { auditLog(first: $first, after: $after, filter: $filter) { items { id at actor action subject reason details } endCursor hasNextPage } }`,
    { first: listPage, after: cur.after, filter }).then((d) => d.auditLog), key);
  const apply = (e) => {
    e.preventDefault();
    const p = {};
    if (draft.actor.trim()) p.actor = draft.actor.trim();
    if (draft.since) p.since = fromLocalInput(draft.since);
    if (draft.until) p.until = fromLocalInput(draft.until);
    cur.reset();
    navigate('/audit', p);
  };
  const log = list.data;
  return html`<h1>Audit log</h1>
    <form class="filters" aria-label="Filter the audit log" onSubmit=${apply}>
      <label>Actor <input value=${draft.actor} onInput=${(e) => setDraft({ ...draft, actor: e.target.value })} /></label>
      <label>Since <input type="datetime-local" value=${draft.since} onInput=${(e) => setDraft({ ...draft, since: e.target.value })} /></label>
      <label>Until <input type="datetime-local" value=${draft.until} onInput=${(e) => setDraft({ ...draft, until: e.target.value })} /></label>
      <button type="submit" class="primary">Filter</button>
    </form>
    <${LoadError} error=${list.error} />
    ${log && html`<table aria-label="Audit log, newest first" data-loaded="true"><thead><tr><th>When</th><th>Actor</th><th>Act</th><th>Subject</th><th>Reason</th><th>Details</th></tr></thead><tbody>
      ${log.items.map((a) => html`<tr key=${a.id}>
        <td><${Time} t=${a.at} /></td><td>${a.actor}</td><td>${a.action}</td><td>${a.subject || ''}</td><td>${a.reason || ''}</td>
        <td><code>${a.details ? JSON.stringify(a.details) : ''}</code></td>
      </tr>`)}
    </tbody></table>
    ${log.items.length === 0 && html`<p class="muted">No entry matches.</p>`}
    <${Pager} label="Pages of the audit log" cur=${cur} page=${{ items: log.items.map(() => ({ id: log.endCursor })), more: log.hasNextPage }} />`}`;
}
