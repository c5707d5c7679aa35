// The limits page: the flow controls in force (concurrency limits per key and rate limits, set at
// run time or by a definition) with, per key, the workflows running and waiting; set and clear a
// run-time limit (an admin token).
import { useState } from 'preact/hooks';
import { gql } from './api.js';
import { html, useLoad, LoadError, Msg, useOp } from './lib.js';

export function LimitsPage() {
  const flows = useLoad(() => gql(`{ flowControls { type source concurrency { limit scope key strategy } rateLimit { limit periodMs key }
    keys { key running waiting } } }`).then((d) => d.flowControls), 'flow-controls');
  return html`<h1>Limits</h1>
    <p class="muted">Concurrency limits hold each key to a number of running workflows (or steps); rate limits space step starts. A run-time limit wins over the definition's.</p>
    <${LoadError} error=${flows.error} />
    ${flows.data && (flows.data.length === 0 ? html`<p>No limit is set.</p>` : flows.data.map((f) => html`<section key=${f.type} aria-label=${'Limits of ' + f.type}>
      <h2>${f.type} <span class="muted">(${f.source === 'RUNTIME' ? 'set at run time' : 'from the definition'})</span></h2>
      <ul>
        ${f.concurrency && html`<li>Concurrency: ${f.concurrency.limit} per ${f.concurrency.key ? html`key <code>${f.concurrency.key}</code>` : 'key'}, scope ${f.concurrency.scope}, when full ${f.concurrency.strategy}</li>`}
        ${f.rateLimit && html`<li>Rate: ${f.rateLimit.limit} step starts per ${f.rateLimit.periodMs} ms${f.rateLimit.key ? html` per key <code>${f.rateLimit.key}</code>` : ''}</li>`}
      </ul>
      ${f.keys.length > 0 && html`<table aria-label=${'Keys of ' + f.type}><thead><tr><th>Key</th><th>Running</th><th>Waiting</th></tr></thead><tbody>
        ${f.keys.map((k) => html`<tr key=${k.key ?? ''}><td>${k.key ?? html`<span class="muted">no key</span>`}</td><td>${k.running}</td><td>${k.waiting}</td></tr>`)}
      </tbody></table>`}
      ${f.source === 'RUNTIME' && html`<${ClearLimit} type=${f.type} reload=${flows.reload} />`}
    </section>`))}
    <${SetLimit} reload=${flows.reload} />`;
}

function ClearLimit({ type, reload }) {
  const op = useOp();
  return html`<button disabled=${op.busy} onClick=${() => op.run(async () => {
    if (!confirm(`Clear the run-time limits of ${type}? Its definition's, if any, apply again.`)) return null;
    await gql('mutation($input: ClearFlowControlInput!) { clearFlowControl(input: $input) { flowControl { type } } }', { input: { type } });
    reload();
    return null;
  })}>Clear run-time limits</button><${Msg} m=${op.msg} />`;
}

// SetLimit sets a type's run-time limits; a refused one shows the server's error (naming the field).
function SetLimit({ reload }) {
  const [f, setF] = useState({ type: '', limit: '', scope: 'WORKFLOW', key: '', strategy: 'QUEUE', rate: '', period: '1s', rateKey: '' });
  const op = useOp();
  const field = (name) => ({ value: f[name], onInput: (e) => setF({ ...f, [name]: e.target.value }) });
  return html`<form aria-label="Set limits" onSubmit=${(e) => { e.preventDefault(); op.run(async () => {
    const input = { type: f.type.trim() };
    if (f.limit !== '') input.concurrency = { limit: Number(f.limit), scope: f.scope, strategy: f.strategy, key: f.key.trim() || null };
    if (f.rate !== '') input.rateLimit = { limit: Number(f.rate), period: f.period.trim(), key: f.rateKey.trim() || null };
    await gql('mutation($input: SetFlowControlInput!) { setFlowControl(input: $input) { flowControl { type } } }', { input });
    reload();
    return 'Limits set.';
  }); }}>
    <h2>Set limits</h2>
    <label>Type <input ...${field('type')} required /></label>
    <fieldset><legend>Concurrency</legend>
      <label>Limit per key <input type="number" ...${field('limit')} /></label>
      <label>Scope <select ...${field('scope')}><option>WORKFLOW</option><option>STEP</option></select></label>
      <label>Key (jq over the input) <input ...${field('key')} /></label>
      <label>When full <select ...${field('strategy')}><option>QUEUE</option><option>CANCEL_NEWEST</option><option>CANCEL_IN_PROGRESS</option></select></label>
    </fieldset>
    <fieldset><legend>Rate</legend>
      <label>Step starts <input type="number" ...${field('rate')} /></label>
      <label>Per period <input ...${field('period')} /></label>
      <label>Rate key (jq over the input) <input ...${field('rateKey')} /></label>
    </fieldset>
    <button type="submit" class="primary" disabled=${op.busy}>Set</button>
    <${Msg} m=${op.msg} />
  </form>`;
}
