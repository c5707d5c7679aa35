// Editing and deleting a schedule, on the schedules page.
import { useState } from 'preact/hooks';
import { gql } from './api.js';
import { html, Msg, useOp, parseJSON } from './lib.js';

export function ScheduleEdit({ s, reload }) {
  const [open, setOpen] = useState(false);
  const [v, setV] = useState({ cron: s.cron, timezone: s.timezone, priority: String(s.priority), overlapPolicy: s.overlapPolicy, input: JSON.stringify(s.input) });
  const op = useOp();
  const del = useOp();
  const set = (k) => (e) => setV({ ...v, [k]: e.target.value });
  const remove = html`<button disabled=${del.busy} onClick=${() => del.run(async () => {
    if (!window.confirm(`Delete the schedule ${s.name || s.type + ' ' + s.cron}? The workflows it started stay.`)) return null;
    await gql(`mutation($input: DeleteScheduleInput!) { deleteSchedule(input: $input) { deleted } }`, { input: { id: s.id } });
    reload();
    return null;
  })}>Delete</button><${Msg} m=${del.msg} />`;
  if (!open) return html`<button onClick=${() => setOpen(true)}>Edit</button> ${remove}`;
  return html`<form class="op" aria-label=${'Edit schedule ' + s.id} onSubmit=${(e) => { e.preventDefault(); op.run(async () => {
    const input = parseJSON(v.input, 'The input');
    await gql(`mutation($input: UpdateScheduleInput!) { updateSchedule(input: $input) { schedule { id } } }`, {
      input: { id: s.id, cron: v.cron, timezone: v.timezone, priority: Number(v.priority), overlapPolicy: v.overlapPolicy, ...(input !== null ? { input } : {}) } });
    setOpen(false);
    reload();
    return null;
  }); }}>
    <label>Cron<input aria-label="Cron" value=${v.cron} onInput=${set('cron')} required /></label>
    <label>Time zone<input aria-label="Time zone" value=${v.timezone} onInput=${set('timezone')} /></label>
    <label>Priority<input aria-label="Priority" type="number" value=${v.priority} onInput=${set('priority')} /></label>
    <label>Overlap<select aria-label="Overlap" value=${v.overlapPolicy} onChange=${set('overlapPolicy')}><option value="SKIP">SKIP</option><option value="ALLOW">ALLOW</option></select></label>
    <label>Input<textarea aria-label="Input" rows="2" value=${v.input} onInput=${set('input')}></textarea></label>
    <button type="submit" class="primary" disabled=${op.busy}>Save</button>
    <button type="button" onClick=${() => setOpen(false)}>Cancel</button><${Msg} m=${op.msg} />
  </form>`;
}
