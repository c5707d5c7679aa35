// The definitions, schedules, executors and remote workers pages.
import { useState } from 'preact/hooks';
import { gql } from './api.js';
import { html, href, navigate, Time, Status, JSONBlock, useLoad, LoadError, Msg, useOp, parseJSON, fromLocalInput, listPage, useCursor, firstPage, Pager } from './lib.js';
import { StateGraph } from './graph.js';
import { ScheduleEdit } from './schedule_edit.js';

const defFields = 'id type version label description releaseState executorGroup stepTimeoutMs created modified';

export function DefinitionsPage() {
  const defs = useLoad(() => gql(`{ workflowDefinitions { ${defFields} states { name } } }`).then((d) => d.workflowDefinitions), 'defs');
  return html`<h1>Definitions</h1>
    <${LoadError} error=${defs.error} />
    ${defs.data && html`<table aria-label="Definitions, newest version of each type"><thead><tr><th>Type</th><th>Version</th><th>Release state</th><th>States</th><th>Description</th><th>Changed</th><th></th></tr></thead><tbody>
      ${defs.data.map((d) => html`<tr key=${d.id}>
        <td><a href=${href('/definition', { type: d.type })}>${d.type}</a></td>
        <td>${d.version}${d.label ? html` <span class="muted">(${d.label})</span>` : ''}</td>
        <td><${ReleaseToggle} d=${d} reload=${defs.reload} /></td>
        <td>${d.states.length}</td>
        <td>${d.description}</td>
        <td><${Time} t=${d.modified} /></td>
        <td><a href=${href('/workflows', { type: d.type })}>workflows</a></td>
      </tr>`)}
    </tbody></table>`}
    <${Deploy} reload=${defs.reload} />`;
}

function ReleaseToggle({ d, reload }) {
  const op = useOp();
  const to = d.releaseState === 'ONLINE' ? 'OFFLINE' : 'ONLINE';
  return html`<${Status} s=${d.releaseState} /> <button disabled=${op.busy} onClick=${() => op.run(async () => {
    if (to === 'OFFLINE' && !confirm(`Put ${d.type} OFFLINE? It will start no new workflow.`)) return null;
    await gql(`mutation($input: SetDefinitionReleaseStateInput!) { setDefinitionReleaseState(input: $input) { definition { id releaseState } } }`, { input: { type: d.type, releaseState: to } });
    reload();
    return null;
  })}>Put ${to.toLowerCase()}</button><${Msg} m=${op.msg} />`;
}

// Deploy sends a Serverless Workflow document; a refused one names the JSON pointer at fault.
function Deploy({ reload }) {
  const [source, setSource] = useState('');
  const op = useOp();
  return html`<section aria-labelledby="deploy-h"><h2 id="deploy-h">Deploy a Serverless Workflow document</h2>
    <form onSubmit=${(e) => { e.preventDefault(); op.run(async () => {
      try {
        const d = await gql(`mutation($input: DeployDefinitionInput!) { deployDefinition(input: $input) { created definition { type version } } }`, { input: { source } });
        reload();
        const r = d.deployDefinition;
        return `${r.definition.type} version ${r.definition.version} ${r.created ? 'deployed' : 'is unchanged (already stored)'}.`;
      } catch (err) {
        if (err.field) err.message += ' (at ' + err.field + ')';
        throw err;
      }
    }); }}>
      <label style="display:flex">Document (YAML or JSON)<textarea rows="12" value=${source} onInput=${(e) => setSource(e.target.value)} placeholder=${'document:\n  dsl: \'1.0.0\'\n  namespace: examples\n  name: hello\n  version: \'1.0.0\'\ndo:\n  - greet:\n      set:\n        greeting: hello'}></textarea></label>
      <div class="op"><button type="submit" class="primary" disabled=${op.busy || !source.trim()}>Deploy</button><${Msg} m=${op.msg} /></div>
    </form></section>`;
}

export function DefinitionPage({ params }) {
  const type = params.get('type');
  const versions = useLoad(() => gql(`query($t: String!) { workflowDefinitions(type: $t, allVersions: true) { ${defFields} source
    states { name kind next description waitForSignal waitForChildren timeoutMs formSchema } } }`, { t: type }).then((d) => d.workflowDefinitions), type);
  const all = versions.data || [];
  const wanted = Number(params.get('version')) || Math.max(0, ...all.map((d) => d.version));
  const d = all.find((x) => x.version === wanted);
  return html`<h1>Definition ${type}</h1>
    <${LoadError} error=${versions.error} />
    ${versions.data && !d && html`<p>No such definition version.</p>`}
    ${all.length > 0 && html`<nav class="toolbar" aria-label="Versions">Versions:
      ${all.slice().sort((a, b) => b.version - a.version).map((v) => html`<a href=${href('/definition', { type, version: v.version })} aria-current=${v.version === wanted ? 'page' : null}>v${v.version}${v.version === wanted ? ' (shown)' : ''}</a>`)}
    </nav>`}
    ${d && html`
      <dl class="facts">
        <dt>Description</dt><dd>${d.description || '—'}</dd>
        <dt>Release state</dt><dd><${ReleaseToggle} d=${d} reload=${versions.reload} /></dd>
        <dt>Executor group</dt><dd>${d.executorGroup}</dd>
        <dt>Step timeout</dt><dd>${d.stepTimeoutMs} ms</dd>
        <dt>Stored</dt><dd><${Time} t=${d.created} /></dd>
        ${d.label && html`<dt>Document version</dt><dd>${d.label}</dd>`}
      </dl>
      <p><a href=${href('/workflows', { type })}>Workflows of this type</a></p>
      <h2>State graph</h2>
      <${StateGraph} states=${d.states} label=${'States of ' + type + ' v' + d.version} />
      <h2>States</h2>
      <table><thead><tr><th>Name</th><th>Kind</th><th>Next</th><th>Waits for</th><th>Timeout</th><th>Description</th></tr></thead><tbody>
        ${d.states.map((s) => html`<tr key=${s.name}><td>${s.name}</td><td>${s.kind}</td><td>${s.next.join(', ')}</td>
          <td>${s.waitForSignal ? 'signal ' + s.waitForSignal : s.waitForChildren ? 'children' : ''}${s.formSchema ? ' (form)' : ''}</td>
          <td>${s.timeoutMs ? s.timeoutMs + ' ms' : ''}</td><td>${s.description || ''}</td></tr>`)}
      </tbody></table>
      <${Start} type=${type} />
      ${d.source && html`<h2>Document</h2><pre aria-label="Document">${d.source}</pre>`}`}`;
}

function Start({ type }) {
  const [input, setInput] = useState('');
  const [key, setKey] = useState('');
  const op = useOp();
  return html`<h2>Start a workflow</h2><form class="op" onSubmit=${(e) => { e.preventDefault(); op.run(async () => {
    const i = parseJSON(input, 'The input');
    const d = await gql(`mutation($input: StartWorkflowInput!) { startWorkflow(input: $input) { workflow { id } } }`, { input: { type, ...(i !== null ? { input: i } : {}), ...(key ? { businessKey: key } : {}) } });
    navigate('/workflow', { id: d.startWorkflow.workflow.id });
    return null;
  }); }}>
    <label style="flex:1 1 300px">Input (JSON object)<textarea rows="2" value=${input} onInput=${(e) => setInput(e.target.value)} placeholder='{"amount": 12.5}'></textarea></label>
    <label>Business key<input value=${key} onInput=${(e) => setKey(e.target.value)} /></label>
    <button type="submit" class="primary" disabled=${op.busy}>Start</button><${Msg} m=${op.msg} />
  </form>`;
}

export function SchedulesPage() {
  const cur = useCursor();
  const s = useLoad(() => gql(`query($first: Int, $after: ID) { schedules(first: $first, after: $after) { id name type cron timezone startAt endAt input priority paused overlapPolicy nextFire lastFire created } workflowDefinitions { type } }`,
    { first: listPage + 1, after: cur.after }).then((d) => ({ ...d, page: firstPage(d.schedules), schedules: firstPage(d.schedules).items })), 'schedules' + cur.after);
  return html`<h1>Schedules</h1>
    <${LoadError} error=${s.error} />
    ${s.data && html`<${Pager} label="Pages of schedules" cur=${cur} page=${s.data.page} />`}
    ${s.data && html`<table aria-label="Schedules"><thead><tr><th>Name</th><th>Type</th><th>Cron</th><th>Zone</th><th>Overlap</th><th>Next fire</th><th>Last fire</th><th>Input</th><th>State</th><th>Backfill</th><th>Change</th></tr></thead><tbody>
      ${s.data.schedules.map((x) => html`<tr key=${x.id} data-id=${x.id}>
        <td>${x.name || ''}</td><td><a href=${href('/workflows', { type: x.type })}>${x.type}</a></td><td><code>${x.cron}</code></td><td>${x.timezone}</td><td>${x.overlapPolicy}</td>
        <td><${Time} t=${x.nextFire} /></td><td><${Time} t=${x.lastFire} /></td><td><code>${JSON.stringify(x.input)}</code></td>
        <td><${PauseToggle} s=${x} reload=${s.reload} /></td>
        <td><${Backfill} s=${x} /></td>
        <td><${ScheduleEdit} s=${x} reload=${s.reload} /></td>
      </tr>`)}
      ${s.data.schedules.length === 0 && html`<tr><td colspan="11" class="muted">No schedule yet.</td></tr>`}
    </tbody></table>`}
    ${s.data && html`<${CreateSchedule} types=${s.data.workflowDefinitions.map((d) => d.type)} reload=${s.reload} />`}`;
}

function PauseToggle({ s, reload }) {
  const op = useOp();
  return html`${s.paused ? html`<span class="status PAUSED">PAUSED</span>` : html`<span class="status ONLINE">ACTIVE</span>`}
    <button disabled=${op.busy} onClick=${() => op.run(async () => {
      await gql(`mutation($input: SetSchedulePausedInput!) { setSchedulePaused(input: $input) { schedule { id paused } } }`, { input: { id: s.id, paused: !s.paused } });
      reload();
      return null;
    })}>${s.paused ? 'Resume' : 'Pause'}</button><${Msg} m=${op.msg} />`;
}

function Backfill({ s }) {
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const op = useOp();
  return html`<form class="op" aria-label=${'Backfill schedule ' + s.type + ' ' + s.cron} onSubmit=${(e) => { e.preventDefault(); op.run(async () => {
    if (!from || !to) throw new Error('Give both ends of the range.');
    const d = await gql(`mutation($input: BackfillScheduleInput!) { backfillSchedule(input: $input) { created workflows { id } } }`, { input: { id: s.id, from: fromLocalInput(from), to: fromLocalInput(to) } });
    const b = d.backfillSchedule;
    return `${b.workflows.length} fire time${b.workflows.length === 1 ? '' : 's'}, ${b.created} started now.`;
  }); }}>
    <label>From<input type="datetime-local" value=${from} onInput=${(e) => setFrom(e.target.value)} /></label>
    <label>To<input type="datetime-local" value=${to} onInput=${(e) => setTo(e.target.value)} /></label>
    <button type="submit" disabled=${op.busy}>Backfill</button><${Msg} m=${op.msg} />
  </form>`;
}

function CreateSchedule({ types, reload }) {
  const [v, setV] = useState({ type: types[0] || '', cron: '@every 10m', timezone: 'UTC', input: '', overlapPolicy: 'SKIP' });
  const op = useOp();
  const set = (k) => (e) => setV({ ...v, [k]: e.target.value });
  return html`<h2>New schedule</h2><form class="op" onSubmit=${(e) => { e.preventDefault(); op.run(async () => {
    const input = parseJSON(v.input, 'The input');
    await gql(`mutation($input: CreateScheduleInput!) { createSchedule(input: $input) { schedule { id } } }`, {
      input: { type: v.type, cron: v.cron, timezone: v.timezone || null, overlapPolicy: v.overlapPolicy, ...(input !== null ? { input } : {}) } });
    reload();
    return 'Schedule created.';
  }); }}>
    <label>Type<select aria-label="Type" value=${v.type} onChange=${set('type')}>${types.map((t) => html`<option value=${t}>${t}</option>`)}</select></label>
    <label>Cron<input value=${v.cron} onInput=${set('cron')} required /></label>
    <label>Time zone<input value=${v.timezone} onInput=${set('timezone')} /></label>
    <label>When a run is still going<select aria-label="When a run is still going" value=${v.overlapPolicy} onChange=${set('overlapPolicy')}><option value="SKIP">skip the fire</option><option value="ALLOW">start another</option></select></label>
    <label style="flex:1 1 260px">Input (JSON object)<textarea rows="2" value=${v.input} onInput=${set('input')}></textarea></label>
    <button type="submit" class="primary" disabled=${op.busy}>Create</button><${Msg} m=${op.msg} />
  </form>`;
}

export function ExecutorsPage() {
  const [showDead, setShowDead] = useState(false);
  const cur = useCursor();
  const ex = useLoad(() => gql(`query($first: Int, $after: ID, $alive: Boolean) { executors(first: $first, after: $after, alive: $alive) { id host pid group started active expires stopped alive workflows { id type state } } }`,
    { first: listPage + 1, after: cur.after, alive: showDead ? null : true }).then((d) => firstPage(d.executors)), 'executors' + showDead + cur.after);
  const list = ex.data ? ex.data.items : [];
  return html`<h1>Executors</h1>
    <${LoadError} error=${ex.error} />
    <div class="toolbar"><label class="inline"><input type="checkbox" checked=${showDead} onChange=${(e) => { setShowDead(e.target.checked); cur.reset(); }} />Show stopped and dead executors</label>
      <button onClick=${ex.reload}>Refresh</button></div>
    ${ex.data && html`<${Pager} label="Pages of executors" cur=${cur} page=${ex.data} />`}
    ${ex.data && html`<table aria-label="Executors"><thead><tr><th>Host</th><th>PID</th><th>Group</th><th>Alive</th><th>Started</th><th>Last heartbeat</th><th>Expires</th><th>Stopped</th><th>Holds</th></tr></thead><tbody>
      ${list.map((e) => html`<tr key=${e.id}>
        <td>${e.host}</td><td>${e.pid}</td><td>${e.group}</td>
        <td>${e.alive ? html`<span class="status FINISHED">alive</span>` : html`<span class="status CANCELLED">no</span>`}</td>
        <td><${Time} t=${e.started} /></td><td><${Time} t=${e.active} /></td><td><${Time} t=${e.expires} /></td><td><${Time} t=${e.stopped} /></td>
        <td>${e.workflows.length === 0 ? html`<span class="muted">nothing</span>` : e.workflows.map((w) => html`<div><a href=${href('/workflow', { id: w.id })}>${w.type}</a> in ${w.state}</div>`)}</td>
      </tr>`)}
      ${list.length === 0 && html`<tr><td colspan="9" class="muted">No executor${showDead ? '' : ' alive'}.</td></tr>`}
    </tbody></table>`}`;
}

export function RemoteWorkersPage() {
  const rw = useLoad(() => gql(`{ remoteWorkers { name functions lastPoll tasksHeld } }`).then((d) => d.remoteWorkers), 'remoteWorkers');
  return html`<h1>Remote workers</h1>
    <p class="muted">Processes in any language that poll for the tasks of the functions they serve (see the README, Remote workers).</p>
    <${LoadError} error=${rw.error} />
    <div class="toolbar"><button onClick=${rw.reload}>Refresh</button></div>
    ${rw.data && html`<table aria-label="Remote workers"><thead><tr><th>Name</th><th>Functions</th><th>Last poll</th><th>Tasks held</th></tr></thead><tbody>
      ${rw.data.map((w) => html`<tr key=${w.name} data-worker=${w.name}>
        <td>${w.name}</td>
        <td>${w.functions.length === 0 ? html`<span class="muted">none</span>` : w.functions.join(', ')}</td>
        <td><${Time} t=${w.lastPoll} /></td>
        <td>${w.tasksHeld}</td>
      </tr>`)}
      ${rw.data.length === 0 && html`<tr><td colspan="4" class="muted">No remote worker has polled yet.</td></tr>`}
    </tbody></table>`}`;
}
