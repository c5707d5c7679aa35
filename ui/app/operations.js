// The bulk operations pages: the list (status and progress of each), one operation with a live
// progress bar (bulkOperationUpdated), its failures and a cancel button; and AllMatching, the
// workflows list's actions on every workflow its filter matches, which shows the dry run's count
// before anything runs and the operation's progress once it does.
import { useEffect, useState } from 'preact/hooks';
import { gql, subscribe } from './api.js';
import { html, href, navigate, Time, Status, JSONBlock, useLoad, LoadError, Msg, useOp, listPage, useCursor, firstPage, Pager } from './lib.js';

const opFields = 'id action status dryRun filter reason actor state total wouldChange processed succeeded failed created finished';
const ended = (s) => s === 'SUCCEEDED' || s === 'FAILED' || s === 'CANCELLED';

// Progress draws how far an operation got as a bar with its counts in words.
export const Progress = ({ op }) => {
  const total = op.dryRun ? 0 : op.total;
  return html`<span class="progress"><progress max=${total || 1} value=${total ? op.processed : 1}
    aria-label=${`Bulk operation ${op.id}: ${op.processed} of ${total} processed`}></progress>
    <span data-testid="progress-text">${op.dryRun ? `dry run: ${op.total} matched, ${op.wouldChange} would change` : `${op.processed} / ${total} · ${op.succeeded} ok · ${op.failed} failed`}</span></span>`;
};

export function OperationsPage({ params }) {
  if (params.get('id')) return html`<${OperationPage} id=${params.get('id')} />`;
  const cur = useCursor();
  const list = useLoad(() => gql(`query($first: Int, $after: ID) { bulkOperations(first: $first, after: $after) { ${opFields} } }`,
    { first: listPage + 1, after: cur.after }).then((d) => firstPage(d.bulkOperations)), 'ops' + cur.after);
  const page = list.data;
  return html`<h1>Bulk operations</h1>
    <${LoadError} error=${list.error} />
    ${page && html`<table aria-label="Bulk operations, newest first" data-loaded="true"><thead><tr><th>ID</th><th>Action</th><th>Status</th><th>Progress</th><th>Actor</th><th>Reason</th><th>Started</th><th>Ended</th></tr></thead><tbody>
      ${page.items.map((o) => html`<tr key=${o.id} data-id=${o.id}>
        <td><a href=${href('/operations', { id: o.id })}>${o.id}</a></td>
        <td>${o.action}</td><td><${Status} s=${o.status} /></td><td><${Progress} op=${o} /></td>
        <td>${o.actor}</td><td>${o.reason || ''}</td><td><${Time} t=${o.created} /></td><td><${Time} t=${o.finished} /></td>
      </tr>`)}
    </tbody></table>`}
    ${page && page.items.length === 0 && html`<p class="muted">No bulk operation yet: start one from the workflows list.</p>`}
    ${page && html`<${Pager} label="Pages of bulk operations" cur=${cur} page=${page} />`}`;
}

// useOperation reads an operation and follows it live until it ends.
function useOperation(id) {
  const [op, setOp] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    setOp(null);
    gql(`query($id: ID!) { bulkOperation(id: $id) { ${opFields} } }`, { id }).then((d) => setOp(d.bulkOperation), setError);
    return subscribe(`subscription($id: ID!) { bulkOperationUpdated(id: $id) { ${opFields} } }`, { id },
      (d) => setOp(d.bulkOperationUpdated), setError);
  }, [id]);
  return { op, error };
}

function OperationPage({ id }) {
  const { op, error } = useOperation(id);
  const cancel = useOp();
  return html`<h1>Bulk operation ${id}</h1>
    <${LoadError} error=${error} />
    ${op && html`<section aria-label="The operation" data-status=${op.status}>
      <p><strong>${op.action}</strong> <${Status} s=${op.status} /> by ${op.actor}${op.reason ? ' — ' + op.reason : ''}</p>
      <p><${Progress} op=${op} /></p>
      <p class="muted">Started <${Time} t=${op.created} />${op.finished ? html`, ended <${Time} t=${op.finished} />` : ''}</p>
      ${!ended(op.status) && html`<div class="op"><button class="danger" disabled=${cancel.busy} onClick=${() => cancel.run(async () => {
        if (!confirm('Cancel this bulk operation? The workflows it has not reached are left alone.')) return null;
        await gql(`mutation($input: CancelBulkOperationInput!) { cancelBulkOperation(input: $input) { bulkOperation { id status } } }`, { input: { id } });
        return 'Cancelled.';
      })}>Cancel the operation</button><${Msg} m=${cancel.msg} /></div>`}
      <h2>Filter</h2><${JSONBlock} v=${op.filter} label="The operation's filter" />
      ${op.failed > 0 && html`<${Failures} id=${id} n=${op.failed} />`}
    </section>`}`;
}

function Failures({ id, n }) {
  const cur = useCursor();
  const list = useLoad(() => gql(`query($id: ID!, $first: Int, $after: String) { bulkOperation(id: $id) { failures(first: $first, after: $after) { items { workflowId code message } endCursor hasNextPage } } }`,
    { id, first: listPage, after: cur.after }).then((d) => d.bulkOperation.failures), id + cur.after + n);
  const f = list.data;
  return html`<h2>Workflows it could not change (${n})</h2>
    <${LoadError} error=${list.error} />
    ${f && html`<table aria-label="Failures"><thead><tr><th>Workflow</th><th>Code</th><th>Why</th></tr></thead><tbody>
      ${f.items.map((x) => html`<tr key=${x.workflowId}><td><a href=${href('/workflow', { id: x.workflowId })}>${x.workflowId}</a></td><td>${x.code}</td><td>${x.message}</td></tr>`)}
    </tbody></table>
    <${Pager} label="Pages of failures" cur=${cur} page=${{ items: f.items.map((x) => ({ id: f.endCursor })), more: f.hasNextPage }} />`}`;
}

const actions = [['PAUSE', 'Pause'], ['RESUME', 'Resume'], ['RETRY', 'Retry'], ['CANCEL', 'Cancel', true]];

// AllMatching acts on every workflow the list's filter matches, through startBulkOperation: a dry
// run first, whose count the person confirms, then the operation's page with its progress.
export function AllMatching({ filter, scope }) {
  const op = useOp();
  const [plan, setPlan] = useState(null); // { action, label, total, wouldChange } while confirming
  const empty = Object.keys(filter).length === 0;
  const start = (input) => gql(`mutation($input: StartBulkOperationInput!) { startBulkOperation(input: $input) { bulkOperation { ${opFields} } } }`,
    { input: { ...input, filter, all: empty || null } }).then((d) => d.startBulkOperation.bulkOperation);
  const prepare = (action, label) => op.run(async () => {
    const dry = await start({ action, dryRun: true });
    setPlan({ action, label, total: dry.total, wouldChange: dry.wouldChange });
    return null;
  });
  const run = () => op.run(async () => {
    const p = plan;
    setPlan(null);
    const started = await start({ action: p.action, reason: p.label.toLowerCase() + ' all matching, from the dashboard' });
    navigate('/operations', { id: started.id });
    return null;
  });
  return html`<div class="toolbar" role="group" aria-label="Bulk actions on every matching workflow">
    ${actions.map(([a, label, danger]) => html`<button class=${danger ? 'danger' : ''} disabled=${op.busy || !!plan} onClick=${() => prepare(a, label)}>${label} all matching</button>`)}
    ${plan && html`<div class="confirm" role="alertdialog" aria-label="Confirm the action on all matching" data-total=${plan.total} data-would-change=${plan.wouldChange}>
      <p><strong>${plan.label} all ${plan.total} workflows matching</strong> ${scope}: ${plan.wouldChange} can be changed by their status now; the others will be listed as failures.</p>
      <button class="primary" disabled=${plan.wouldChange === 0} onClick=${run}>${plan.label} ${plan.wouldChange} workflows</button>
      <button onClick=${() => setPlan(null)}>Back</button>
    </div>`}
    <${Msg} m=${op.msg} />
  </div>`;
}
