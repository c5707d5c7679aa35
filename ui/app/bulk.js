// Bulk operations on the workflows selected in the list. Before anything runs, the person sees
// what will be touched: how many workflows, which filter the list is under, and which selected
// ones are left out because their status (read again at that moment) does not allow the
// operation. Only the workflows shown there are sent the operation, each on its own, so one
// refusal does not stop the others.
import { useState } from 'preact/hooks';
import { gql } from './api.js';
import { html, Msg, useOp } from './lib.js';
import { allowed } from './rules.js';

const ops = {
  pause: { label: 'Pause', past: 'paused', mutation: 'pauseWorkflow', input: 'WorkflowActionInput' },
  resume: { label: 'Resume', past: 'resumed', mutation: 'resumeWorkflow', input: 'WorkflowActionInput' },
  retry: { label: 'Retry', past: 'retried', mutation: 'retryWorkflow', input: 'RetryWorkflowInput' },
  cancel: { label: 'Cancel', past: 'cancelled', mutation: 'cancelWorkflow', input: 'WorkflowActionInput', danger: true },
};

const statusQuery = `query($ids: [ID!], $n: Int) { workflows(filter: {ids: $ids}, first: $n) { edges { node { id status } } } }`;

const plural = (n) => n + ' workflow' + (n === 1 ? '' : 's');

// tally writes statuses as "FINISHED ×2, CANCELLED".
function tally(statuses) {
  const n = {};
  for (const s of statuses) n[s] = (n[s] || 0) + 1;
  return Object.entries(n).map(([s, k]) => (k > 1 ? s + ' ×' + k : s)).join(', ');
}

export function Bulk({ selected, rows, scope, clear, reload }) {
  const op = useOp();
  const [plan, setPlan] = useState(null); // { name, ids, leftOut } while the person confirms
  const ids = [...selected];
  const shown = new Map(rows.map((r) => [r.id, r.status]));

  // prepare reads the selected workflows' statuses again: the page may be seconds old.
  const prepare = (name) => op.run(async () => {
    const d = await gql(statusQuery, { ids, n: ids.length });
    const now = new Map(d.workflows.edges.map((e) => [e.node.id, e.node.status]));
    const take = ids.filter((id) => now.has(id) && allowed(name, now.get(id)));
    const leftOut = ids.filter((id) => !take.includes(id)).map((id) => now.get(id) || 'gone');
    setPlan({ name, ids: take, leftOut });
    return null;
  });

  const run = () => op.run(async () => {
    const { name, ids: take } = plan;
    const o = ops[name];
    setPlan(null);
    const q = `mutation($input: ${o.input}!) { ${o.mutation}(input: $input) { workflow { id status } } }`;
    const results = await Promise.all(take.map((id) => gql(q, { input: { id, reason: 'bulk ' + name + ' from the dashboard' } })
      .then(() => null, (e) => id + ': ' + e.describe())));
    const refused = results.filter(Boolean);
    clear();
    reload();
    if (refused.length) throw new Error(`${take.length - refused.length} done, ${refused.length} refused — ${refused.join('; ')}`);
    return `${o.label}: ${take.length} done.`;
  });

  const o = plan && ops[plan.name];
  return html`<div class="toolbar" role="group" aria-label="Bulk actions on the selected workflows">
    <span class="muted" data-testid="bulk-scope">${ids.length} selected${ids.length ? ' · list filtered by ' + scope : ''}</span>
    ${Object.entries(ops).map(([name, x]) => {
      const can = ids.filter((id) => allowed(name, shown.get(id))).length;
      return html`<button class=${x.danger ? 'danger' : ''} disabled=${can === 0 || op.busy || !!plan}
        title=${ids.length ? `${can} of the ${ids.length} selected can be ${x.past}` : 'Select workflows first'}
        onClick=${() => prepare(name)}>${x.label} selected</button>`;
    })}
    ${plan && html`<div class="confirm" role="alertdialog" aria-label="Confirm the bulk action" data-op=${plan.name} data-count=${plan.ids.length}>
      <p><strong>${o.label} ${plural(plan.ids.length)}</strong> selected in the list filtered by <em data-testid="confirm-scope">${scope}</em>.${o.danger ? ' This cannot be undone.' : ''}</p>
      ${plan.leftOut.length > 0 && html`<p>Left out, as their status does not allow it now: ${plural(plan.leftOut.length)} (${tally(plan.leftOut)}).</p>`}
      <button class=${o.danger ? 'danger' : 'primary'} disabled=${plan.ids.length === 0} onClick=${run}>${o.label} ${plural(plan.ids.length)}</button>
      <button onClick=${() => setPlan(null)}>Back</button>
    </div>`}
    <${Msg} m=${op.msg} />
  </div>`;
}
