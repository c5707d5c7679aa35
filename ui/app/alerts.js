// The alert rules page: the rules (made and deleted here, by an admin token) and the recent
// deliveries of their webhooks with where each stands.
import { useState } from 'preact/hooks';
import { gql } from './api.js';
import { html, href, Time, Status, useLoad, LoadError, Msg, useOp } from './lib.js';

const statuses = ['FAILED', 'FINISHED', 'CANCELLED', 'MANUAL', 'PAUSED'];

export function AlertsPage() {
  const rules = useLoad(() => gql('{ alertRules { id name types statuses webhookUrl created } }').then((d) => d.alertRules), 'alert-rules');
  const deliveries = useLoad(() => gql(`{ alertDeliveries(first: 50) { items { id ruleName workflowStatus state status attempts
    lastError responseCode created nextAttempt workflow { id type } } } }`).then((d) => d.alertDeliveries.items), 'alert-deliveries');
  const reload = () => { rules.reload(); deliveries.reload(); };
  return html`<h1>Alert rules</h1>
    <p class="muted">When a workflow of a rule's types (all when none) reaches one of its statuses, cairn POSTs it to the webhook, with retries.</p>
    <${LoadError} error=${rules.error} />
    ${rules.data && (rules.data.length === 0 ? html`<p>No alert rule.</p>` : html`<table aria-label="Alert rules"><thead><tr><th>Name</th><th>Types</th><th>Statuses</th><th>Webhook</th><th>Created</th><th></th></tr></thead><tbody>
      ${rules.data.map((r) => html`<tr key=${r.id}>
        <td>${r.name}</td>
        <td>${r.types.length ? r.types.join(', ') : html`<span class="muted">every type</span>`}</td>
        <td>${r.statuses.map((s) => html`<${Status} s=${s} /> `)}</td>
        <td><code>${r.webhookUrl}</code></td>
        <td><${Time} t=${r.created} /></td>
        <td><${DeleteRule} rule=${r} reload=${reload} /></td>
      </tr>`)}
    </tbody></table>`)}
    <${CreateRule} reload=${reload} />
    <h2>Recent deliveries</h2>
    <${LoadError} error=${deliveries.error} />
    ${deliveries.data && (deliveries.data.length === 0 ? html`<p>No delivery yet.</p>` : html`<table aria-label="Alert deliveries"><thead><tr><th>Rule</th><th>Workflow</th><th>Reached</th><th>Delivery</th><th>Attempts</th><th>Response</th><th>Last error</th><th>Recorded</th></tr></thead><tbody>
      ${deliveries.data.map((d) => html`<tr key=${d.id}>
        <td>${d.ruleName}</td>
        <td>${d.workflow ? html`<a href=${href('/workflow', { id: d.workflow.id })}>${d.workflow.type}</a>` : html`<span class="muted">deleted</span>`}</td>
        <td><${Status} s=${d.workflowStatus} /> ${d.state}</td>
        <td><${Status} s=${d.status} /></td>
        <td>${d.attempts}</td>
        <td>${d.responseCode ?? ''}</td>
        <td>${d.lastError || ''}</td>
        <td><${Time} t=${d.created} /></td>
      </tr>`)}
    </tbody></table>`)}`;
}

function DeleteRule({ rule, reload }) {
  const op = useOp();
  return html`<button disabled=${op.busy} onClick=${() => op.run(async () => {
    if (!confirm(`Delete the alert rule ${rule.name}? Deliveries already recorded are still sent.`)) return null;
    await gql('mutation($input: DeleteAlertRuleInput!) { deleteAlertRule(input: $input) { deleted } }', { input: { id: rule.id } });
    reload();
    return null;
  })}>Delete</button><${Msg} m=${op.msg} />`;
}

// CreateRule makes a rule; a refused one shows the server's error (naming the field at fault).
function CreateRule({ reload }) {
  const [name, setName] = useState('');
  const [types, setTypes] = useState('');
  const [url, setURL] = useState('');
  const [chosen, setChosen] = useState(['FAILED']);
  const op = useOp();
  const toggle = (s) => setChosen(chosen.includes(s) ? chosen.filter((x) => x !== s) : [...chosen, s]);
  return html`<form aria-label="New alert rule" onSubmit=${(e) => { e.preventDefault(); op.run(async () => {
    const input = { name: name.trim(), types: types.split(',').map((t) => t.trim()).filter(Boolean), statuses: chosen, webhookUrl: url.trim() };
    await gql('mutation($input: CreateAlertRuleInput!) { createAlertRule(input: $input) { alertRule { id } } }', { input });
    setName(''); setTypes(''); setURL('');
    reload();
    return 'Alert rule created.';
  }); }}>
    <h2>New alert rule</h2>
    <label>Name <input value=${name} onInput=${(e) => setName(e.target.value)} required /></label>
    <label>Types (comma-separated; empty: every type) <input value=${types} onInput=${(e) => setTypes(e.target.value)} /></label>
    <fieldset><legend>Statuses</legend>
      ${statuses.map((s) => html`<label><input type="checkbox" checked=${chosen.includes(s)} onChange=${() => toggle(s)} /> ${s}</label> `)}
    </fieldset>
    <label>Webhook URL <input type="url" value=${url} onInput=${(e) => setURL(e.target.value)} required /></label>
    <button type="submit" class="primary" disabled=${op.busy}>Create</button>
    <${Msg} m=${op.msg} />
  </form>`;
}
