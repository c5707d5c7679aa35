// The workflow page: what a workflow is and holds, its state graph with the path it took, its
// history (actions and task instances), and the operations a person can make on it.
import { useEffect, useState, useRef } from 'preact/hooks';
import { gql, subscribe } from './api.js';
import { html, href, Time, Status, JSONBlock, useLoad, LoadError, Msg, useOp, parseJSON, fmtDuration, fromLocalInput } from './lib.js';
import { StateGraph } from './graph.js';
import { allowed, refusal, isEnded } from './rules.js';

const historyPage = 100;

const workflowQuery = `query Workflow($id: ID!, $first: Int) { workflow(id: $id) {
  id type definitionVersion status state stateText externalId businessKey launchToken priority retries executorGroup
  nextActivation waitingForSignal lastError stepDeadline input variables output created modified started finished
  attributes stuckReason concurrencyKey blockedReason
  executor { id host pid }
  parent { id type status state }
  children(first: 50) { totalCount nodes { id type status state created } }
  definition { type version states { name kind next description waitForSignal formSchema } }
  actions(first: $first) { totalCount pageInfo { hasNextPage endCursor } nodes { ...A } }
  taskInstances(first: $first) { totalCount pageInfo { hasNextPage endCursor } nodes { ...T } }
  sideEffects { id key valueType value created }
  signals { id name payload created consumed }
  formSubmissions { id state data submittedBy created }
} }
fragment A on Action { id type fromState state stateText retryNo at actor executor { host pid } variableChanges { key value } taskInstance { id } }
fragment T on TaskInstance { id state taskType attempt status host started finished output error activityLogs { id name value at } }`;

const moreActions = `query($id: ID!, $after: String) { workflow(id: $id) { actions(first: ${historyPage}, after: $after) { pageInfo { hasNextPage endCursor } nodes { ...A } } } }
fragment A on Action { id type fromState state stateText retryNo at actor executor { host pid } variableChanges { key value } taskInstance { id } }`;
const moreTasks = `query($id: ID!, $after: String) { workflow(id: $id) { taskInstances(first: ${historyPage}, after: $after) { pageInfo { hasNextPage endCursor } nodes { ...T } } } }
fragment T on TaskInstance { id state taskType attempt status host started finished output error activityLogs { id name value at } }`;

export function WorkflowPage({ params }) {
  const id = params.get('id');
  const wf = useLoad(() => gql(workflowQuery, { id, first: historyPage }).then((d) => d.workflow), id);
  const [extraActions, setExtraActions] = useState({ nodes: [], pageInfo: null });
  const [extraTasks, setExtraTasks] = useState({ nodes: [], pageInfo: null });
  useEffect(() => { setExtraActions({ nodes: [], pageInfo: null }); setExtraTasks({ nodes: [], pageInfo: null }); }, [wf.data]);

  // Every change of the workflow reloads the page's data (at most every 300 ms).
  const timer = useRef(null);
  useEffect(() => {
    const unsub = subscribe(`subscription($id: ID!) { workflowUpdated(id: $id) { id status modified } }`, { id }, () => {
      if (!timer.current) timer.current = setTimeout(() => { timer.current = null; wf.reload(); }, 300);
    });
    return () => { unsub(); clearTimeout(timer.current); timer.current = null; };
  }, [id]);

  const w = wf.data;
  if (!w) return html`<h1>Workflow</h1><${LoadError} error=${wf.error} />${wf.loading ? html`<p class="loading">Loading…</p>` : !wf.error && html`<p>No workflow has the ID <code>${id}</code>.</p>`}`;

  const actions = [...w.actions.nodes, ...extraActions.nodes];
  const tasks = [...w.taskInstances.nodes, ...extraTasks.nodes];
  const actionsInfo = extraActions.pageInfo || w.actions.pageInfo;
  const tasksInfo = extraTasks.pageInfo || w.taskInstances.pageInfo;
  const taken = actions.filter((a) => a.fromState && a.fromState !== a.state).map((a) => [a.fromState, a.state]);
  const states = w.definition ? w.definition.states : [];
  const currentDef = states.find((s) => s.name === w.state);

  const loadMore = async (q, setExtra, info) => {
    const d = await gql(q, { id, after: info.endCursor });
    const conn = d.workflow.actions || d.workflow.taskInstances;
    setExtra((x) => ({ nodes: [...x.nodes, ...conn.nodes], pageInfo: conn.pageInfo }));
  };

  return html`
    <h1>Workflow <code>${w.id}</code> <${Status} s=${w.status} /></h1>
    <${LoadError} error=${wf.error} />
    <div class="grid2">
      <section class="card" aria-labelledby="facts-h">
        <h2 id="facts-h">Summary</h2>
        <dl class="facts">
          <dt>Type</dt><dd><a href=${href('/definition', { type: w.type, version: w.definitionVersion })}>${w.type}</a> v${w.definitionVersion}</dd>
          <dt>Status</dt><dd><${Status} s=${w.status} /></dd>
          ${w.stuckReason ? html`<dt>Stuck</dt><dd data-testid="stuck-reason" class="stuck-reason">${w.stuckReason}</dd>` : ''}
          ${w.blockedReason ? html`<dt>Held back</dt><dd data-testid="blocked-reason">${w.blockedReason} (<a href=${href('/limits')}>limits</a>)</dd>` : ''}
          ${w.concurrencyKey ? html`<dt>Concurrency key</dt><dd data-testid="concurrency-key">${w.concurrencyKey}</dd>` : ''}
          <dt>State</dt><dd data-testid="state">${w.state}${w.stateText ? html` — <span class="muted">${w.stateText}</span>` : ''}</dd>
          ${w.waitingForSignal && html`<dt>Waits for signal</dt><dd>${w.waitingForSignal}</dd>`}
          ${w.lastError && html`<dt>Last error</dt><dd class="error">${w.lastError}</dd>`}
          <dt>External ID</dt><dd>${w.externalId || '—'}</dd>
          <dt>Business key</dt><dd>${w.businessKey || '—'}</dd>
          <dt>Priority · retries</dt><dd>${w.priority} · ${w.retries}</dd>
          <dt>Executor group</dt><dd>${w.executorGroup}${w.executor ? html` — held by ${w.executor.host} (pid ${w.executor.pid})` : ''}</dd>
          <dt>Created</dt><dd><${Time} t=${w.created} /></dd>
          <dt>Started</dt><dd><${Time} t=${w.started} /></dd>
          <dt>Modified</dt><dd><${Time} t=${w.modified} /></dd>
          <dt>Next activation</dt><dd><${Time} t=${w.nextActivation} /></dd>
          <dt>Finished</dt><dd><${Time} t=${w.finished} />${w.finished && w.started ? html` <span class="muted">(ran ${fmtDuration(w.started, w.finished)})</span>` : ''}</dd>
          <dt>Parent</dt><dd>${w.parent ? html`<a href=${href('/workflow', { id: w.parent.id })}>${w.parent.type}</a> <${Status} s=${w.parent.status} />` : '—'}</dd>
        </dl>
      </section>
      <section class="card" aria-labelledby="ops-h">
        <h2 id="ops-h">Operations</h2>
        <${Operations} w=${w} states=${states} currentDef=${currentDef} reload=${wf.reload} />
      </section>
    </div>

    <section aria-labelledby="graph-h">
      <h2 id="graph-h">State graph</h2>
      <p class="muted">The current state is outlined in blue; the states and moves it went through are green${actionsInfo && actionsInfo.hasNextPage ? ' (in the history loaded below)' : ''}.</p>
      <${StateGraph} states=${states} current=${w.state} taken=${taken} label=${'States of ' + w.type} />
    </section>

    <div class="grid2">
      <section aria-labelledby="vars-h"><h2 id="vars-h">Variables</h2><${JSONBlock} v=${w.variables} label="Variables" /></section>
      <section aria-labelledby="attrs-h"><h2 id="attrs-h">Search attributes</h2><${JSONBlock} v=${w.attributes} label="Search attributes" /></section>
      <section aria-labelledby="input-h"><h2 id="input-h">Input</h2><${JSONBlock} v=${w.input} label="Input" /></section>
      <section aria-labelledby="output-h"><h2 id="output-h">Output</h2><${JSONBlock} v=${w.output} label="Output" /></section>
    </div>

    <section aria-labelledby="hist-h">
      <h2 id="hist-h">History: ${w.actions.totalCount} action${w.actions.totalCount === 1 ? '' : 's'}</h2>
      <${Actions} w=${w} actions=${actions} />
      ${actionsInfo && actionsInfo.hasNextPage && html`<button onClick=${() => loadMore(moreActions, setExtraActions, actionsInfo)}>Load ${historyPage} more actions</button>`}
    </section>

    <section aria-labelledby="tasks-h">
      <h2 id="tasks-h">Task instances: ${w.taskInstances.totalCount}</h2>
      <${Tasks} tasks=${tasks} />
      ${tasksInfo && tasksInfo.hasNextPage && html`<button onClick=${() => loadMore(moreTasks, setExtraTasks, tasksInfo)}>Load ${historyPage} more task instances</button>`}
    </section>

    <div class="grid2">
      <section aria-labelledby="se-h"><h2 id="se-h">Side effects</h2>
        ${w.sideEffects.length ? html`<table><thead><tr><th>Key</th><th>Type</th><th>Value</th><th>Recorded</th></tr></thead><tbody>
          ${w.sideEffects.map((s) => html`<tr key=${s.id}><td>${s.key}</td><td><code>${s.valueType}</code></td><td><code>${JSON.stringify(s.value)}</code></td><td><${Time} t=${s.created} /></td></tr>`)}
        </tbody></table>` : html`<p class="muted">None.</p>`}
      </section>
      <section aria-labelledby="sig-h"><h2 id="sig-h">Signals</h2>
        ${w.signals.length ? html`<table><thead><tr><th>Name</th><th>Payload</th><th>Arrived</th><th>Consumed</th></tr></thead><tbody>
          ${w.signals.map((s) => html`<tr key=${s.id}><td>${s.name}</td><td><code>${JSON.stringify(s.payload)}</code></td><td><${Time} t=${s.created} /></td><td><${Time} t=${s.consumed} /></td></tr>`)}
        </tbody></table>` : html`<p class="muted">None.</p>`}
        ${w.formSubmissions.length > 0 && html`<h3>Form submissions</h3><table aria-label="Form submissions"><thead><tr><th>State</th><th>Data</th><th>By</th><th>When</th></tr></thead><tbody>
          ${w.formSubmissions.map((f) => html`<tr key=${f.id}><td>${f.state}</td><td><code>${JSON.stringify(f.data)}</code></td><td>${f.submittedBy}</td><td><${Time} t=${f.created} /></td></tr>`)}
        </tbody></table>`}
      </section>
    </div>

    <section aria-labelledby="children-h">
      <h2 id="children-h">Children: ${w.children.totalCount}</h2>
      ${w.children.nodes.length ? html`<table aria-label="Children"><thead><tr><th>ID</th><th>Type</th><th>Status</th><th>State</th><th>Created</th></tr></thead><tbody>
        ${w.children.nodes.map((c) => html`<tr key=${c.id}><td class="id"><a href=${href('/workflow', { id: c.id })}>${c.id}</a></td><td>${c.type}</td><td><${Status} s=${c.status} /></td><td>${c.state}</td><td><${Time} t=${c.created} /></td></tr>`)}
      </tbody></table>
      <p><a href=${href('/workflows', { parentId: w.id })}>${w.children.totalCount > w.children.nodes.length ? 'All ' + w.children.totalCount + ' children' : 'The children'} in the workflows list</a> (to filter them or act on several)</p>` : html`<p class="muted">None.</p>`}
    </section>`;
}

function Actions({ w, actions }) {
  return html`<table class="timeline" aria-label="Actions, oldest first"><thead><tr><th>When</th><th>Type</th><th>Move</th><th>Note</th><th>By</th><th>Variables set</th><th>Variables after</th></tr></thead><tbody>
    ${actions.map((a) => html`<tr key=${a.id}>
      <td><${Time} t=${a.at} /></td>
      <td>${a.type}${a.retryNo ? html` <span class="muted">(retry ${a.retryNo})</span>` : ''}</td>
      <td>${a.fromState ? a.fromState + ' → ' : ''}<strong>${a.state}</strong></td>
      <td>${a.stateText || ''}${a.taskInstance ? html` <a href=${'#task-' + a.taskInstance.id} onClick=${(e) => { e.preventDefault(); document.getElementById('task-' + a.taskInstance.id)?.scrollIntoView(); }}>attempt</a>` : ''}</td>
      <td>${a.actor || (a.executor ? a.executor.host : '')}</td>
      <td>${a.variableChanges.map((c) => html`<div><code>${c.key} = ${c.value === null ? '(removed)' : JSON.stringify(c.value)}</code></div>`)}</td>
      <td><${VariablesAt} w=${w} action=${a} /></td>
    </tr>`)}
  </tbody></table>`;
}

// VariablesAt loads the variables as they stood after one action only when asked: a long history
// would otherwise carry every variables object.
function VariablesAt({ w, action }) {
  const [v, setV] = useState(undefined);
  const op = useOp();
  if (v !== undefined) return html`<details open><summary>after this action</summary><${JSONBlock} v=${v} label=${'Variables after action at ' + action.at} /></details>`;
  return html`<button disabled=${op.busy} aria-label=${'Show the variables after the action at ' + action.at} onClick=${() => op.run(async () => {
    const d = await gql(`query($id: ID!, $a: ID!) { workflow(id: $id) { variablesAt(actionId: $a) } }`, { id: w.id, a: action.id });
    setV(d.workflow.variablesAt);
  })}>Show</button><${Msg} m=${op.msg} />`;
}

function Tasks({ tasks }) {
  if (!tasks.length) return html`<p class="muted">None yet.</p>`;
  return html`<table class="timeline" aria-label="Task instances, oldest first"><thead><tr><th>Started</th><th>State</th><th>Attempt</th><th>Status</th><th>Duration</th><th>Host</th><th>Error, logs, output</th></tr></thead><tbody>
    ${tasks.map((t) => html`<tr key=${t.id} id=${'task-' + t.id}>
      <td><${Time} t=${t.started} /></td>
      <td>${t.state} <span class="muted">${t.taskType}</span></td>
      <td>${t.attempt}</td>
      <td><${Status} s=${t.status} /></td>
      <td>${fmtDuration(t.started, t.finished)}${t.finished ? '' : ' so far'}</td>
      <td>${t.host}</td>
      <td>
        ${t.error && html`<div class="error">${t.error}</div>`}
        ${t.activityLogs.map((l) => html`<div key=${l.id}><code>${l.name}: ${l.value}</code> <span class="muted"><${Time} t=${l.at} /></span></div>`)}
        ${t.output !== null && t.output !== undefined && html`<details><summary>output</summary><${JSONBlock} v=${t.output} label="Output" /></details>`}
      </td>
    </tr>`)}
  </tbody></table>`;
}

const simple = (name, input = 'WorkflowActionInput') => `mutation($input: ${input}!) { ${name}(input: $input) { workflow { id status state } } }`;

// Operations: each control has its own outcome line, so a refusal (CONFLICT, INVALID_INPUT) is
// read next to what caused it and the rest of the page goes on working.
function Operations({ w, states, currentDef, reload }) {
  const [reason, setReason] = useState('');
  const done = (d) => { reload(); const p = Object.values(d)[0].workflow; return `Done: now ${p.status} in ${p.state}.`; };
  const input = (extra = {}) => ({ id: w.id, ...(reason ? { reason } : {}), ...extra });
  const ended = isEnded(w.status);
  // A button whose operation the status does not allow is disabled, its reason in its title.
  const off = (op) => ({ disabled: !allowed(op, w.status), title: refusal(op, w.status) || null });

  const retry = useOp();
  const [retryState, setRetryState] = useState('');
  const basic = useOp();
  const signal = useOp();
  const [sigName, setSigName] = useState(w.waitingForSignal || '');
  const [sigPayload, setSigPayload] = useState('');
  const update = useOp();
  const [vars, setVars] = useState('');
  const [moveTo, setMoveTo] = useState('');
  const [stateText, setStateText] = useState('');
  const [nextAt, setNextAt] = useState('');

  const act = (op, name, label, opts = {}) => html`<button class=${opts.danger ? 'danger' : ''} disabled=${basic.busy || !allowed(op, w.status)} title=${refusal(op, w.status) || null} onClick=${() => basic.run(async () => {
    if (opts.danger && !confirm(`${label} workflow ${w.id}? This cannot be undone.`)) return null;
    return done(await gql(simple(name), { input: input() }));
  })}>${label}</button>`;

  return html`<div class="ops">
    <label>Reason (recorded on the action)<input value=${reason} onInput=${(e) => setReason(e.target.value)} placeholder="optional" /></label>
    <div class="op" role="group" aria-label="Pause, resume, wake up, cancel">
      ${act('pause', 'pauseWorkflow', 'Pause')}
      ${act('resume', 'resumeWorkflow', 'Resume')}
      ${act('wakeUp', 'wakeUpWorkflow', 'Wake up')}
      ${act('cancel', 'cancelWorkflow', 'Cancel', { danger: true })}
      <${Msg} m=${basic.msg} />
    </div>
    <div class="op" role="group" aria-label="Retry">
      <label>Retry from state<select aria-label="Retry from state" value=${retryState} onChange=${(e) => setRetryState(e.target.value)}>
        <option value="">the one that failed</option>
        ${states.map((s) => html`<option value=${s.name}>${s.name} (${s.kind})</option>`)}
      </select></label>
      <button class="primary" disabled=${retry.busy || off('retry').disabled} title=${off('retry').title} onClick=${() => retry.run(async () => {
        if (!confirm(`Retry workflow ${w.id} from ${retryState || 'the state that failed'}?`)) return null;
        return done(await gql(simple('retryWorkflow', 'RetryWorkflowInput'), { input: input(retryState ? { state: retryState } : {}) }));
      })}>Retry</button>
      <${Msg} m=${retry.msg} />
    </div>
    ${!ended && currentDef && currentDef.formSchema && html`<${FormOp} w=${w} def=${currentDef} done=${done} />`}
    <div class="op" role="group" aria-label="Signal">
      <label>Signal name<input value=${sigName} onInput=${(e) => setSigName(e.target.value)} placeholder=${w.waitingForSignal || 'approve'} /></label>
      <label style="flex:1 1 220px">Payload (JSON)<textarea rows="2" value=${sigPayload} onInput=${(e) => setSigPayload(e.target.value)} placeholder='{"ok": true}'></textarea></label>
      <button disabled=${signal.busy || off('signal').disabled} title=${off('signal').title} onClick=${() => signal.run(async () => {
        const payload = parseJSON(sigPayload, 'The payload');
        return done(await gql(simple('signalWorkflow', 'SignalWorkflowInput'), { input: { id: w.id, name: sigName, ...(payload !== null ? { payload } : {}) } }));
      })}>Send signal</button>
      <${Msg} m=${signal.msg} />
    </div>
    <details>
      <summary>Update state, schedule or variables</summary>
      <div class="op" role="group" aria-label="Update">
        <label>Move to state<select aria-label="Move to state" value=${moveTo} onChange=${(e) => setMoveTo(e.target.value)}>
          <option value="">(stay)</option>
          ${states.map((s) => html`<option value=${s.name}>${s.name} (${s.kind})</option>`)}
        </select></label>
        <label>State text<input value=${stateText} onInput=${(e) => setStateText(e.target.value)} /></label>
        <label>Next activation<input type="datetime-local" value=${nextAt} onInput=${(e) => setNextAt(e.target.value)} /></label>
        <label style="flex:1 1 100%">Variables to merge (JSON object; null removes a key)<textarea rows="3" value=${vars} onInput=${(e) => setVars(e.target.value)} placeholder='{"note": "checked by hand"}'></textarea></label>
        <button disabled=${update.busy || off('update').disabled} title=${off('update').title} onClick=${() => update.run(async () => {
          const variables = parseJSON(vars, 'The variables');
          const extra = {};
          if (variables !== null) extra.variables = variables;
          if (moveTo) extra.state = moveTo;
          if (stateText) extra.stateText = stateText;
          if (nextAt) extra.nextActivation = fromLocalInput(nextAt);
          if (moveTo && !confirm(`Move workflow ${w.id} to ${moveTo}?`)) return null;
          return done(await gql(simple('updateWorkflow', 'UpdateWorkflowInput'), { input: input(extra) }));
        })}>Update</button>
        <${Msg} m=${update.msg} />
      </div>
    </details>
  </div>`;
}

// FormOp renders the form of the user task the workflow waits in from its JSON Schema: strings,
// numbers, integers, booleans and enums get their own inputs; anything else is typed as JSON.
function FormOp({ w, def, done }) {
  const schema = def.formSchema || {};
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const [values, setValues] = useState({});
  const [by, setBy] = useState('');
  const op = useOp();
  const setV = (k, v) => setValues((x) => ({ ...x, [k]: v }));
  const field = (k, p) => {
    const label = (p.title || k) + (required.has(k) ? ' (required)' : '');
    if (Array.isArray(p.enum)) return html`<label>${label}<select aria-label=${label} value=${values[k] ?? ''} onChange=${(e) => setV(k, e.target.value)}><option value="">—</option>${p.enum.map((o) => html`<option value=${String(o)}>${String(o)}</option>`)}</select></label>`;
    if (p.type === 'boolean') return html`<label class="inline"><input type="checkbox" checked=${!!values[k]} onChange=${(e) => setV(k, e.target.checked)} />${label}</label>`;
    if (p.type === 'number' || p.type === 'integer') return html`<label>${label}<input type="number" step=${p.type === 'integer' ? 1 : 'any'} value=${values[k] ?? ''} onInput=${(e) => setV(k, e.target.value)} /></label>`;
    if (p.type === 'string' || !p.type) return html`<label>${label}<input value=${values[k] ?? ''} onInput=${(e) => setV(k, e.target.value)} /></label>`;
    return html`<label style="flex:1 1 100%">${label} (JSON)<textarea rows="2" value=${values[k] ?? ''} onInput=${(e) => setV(k, e.target.value)}></textarea></label>`;
  };
  const collect = () => {
    const data = {};
    for (const [k, p] of Object.entries(props)) {
      const v = values[k];
      // An unticked box is an answer (false), not a blank.
      if (p.type === 'boolean' && !Array.isArray(p.enum)) { data[k] = !!v; continue; }
      if (v === undefined || v === '') continue;
      if (Array.isArray(p.enum)) { const hit = p.enum.find((o) => String(o) === v); data[k] = hit === undefined ? v : hit; }
      else if (p.type === 'number' || p.type === 'integer') data[k] = Number(v);
      else if (p.type && p.type !== 'string') data[k] = parseJSON(v, k);
      else data[k] = v;
    }
    return data;
  };
  return html`<form class="op" aria-label=${'Form of state ' + def.name} onSubmit=${(e) => { e.preventDefault(); op.run(async () => done(await gql(
    `mutation($input: SubmitFormInput!) { submitForm(input: $input) { workflow { id status state } } }`,
    { input: { id: w.id, data: collect(), submittedBy: by } }))); }}>
    <strong style="flex-basis:100%">Form: ${schema.title || def.name}</strong>
    ${Object.entries(props).map(([k, p]) => field(k, p))}
    <label>Submitted by<input value=${by} onInput=${(e) => setBy(e.target.value)} required /></label>
    <button type="submit" class="primary" disabled=${op.busy}>Submit form</button>
    <${Msg} m=${op.msg} />
  </form>`;
}
