// The API tokens page (ADMIN only): the live tokens, a form that makes one and shows its secret
// once, and revoking.
import { useState } from 'preact/hooks';
import { gql } from './api.js';
import { html, Time, useLoad, LoadError, Msg, useOp, fromLocalInput } from './lib.js';

export function TokensPage() {
  const list = useLoad(() => gql(`{ tokens { name role functions expiresAt created lastUsed } }`).then((d) => d.tokens), 'tokens');
  return html`<h1>API tokens</h1>
    <${LoadError} error=${list.error} />
    ${list.data && html`<table aria-label="API tokens"><thead><tr><th>Name</th><th>Role</th><th>Functions</th><th>Expires</th><th>Created</th><th>Last used</th><th></th></tr></thead><tbody>
      ${list.data.map((t) => html`<tr key=${t.name} data-name=${t.name}>
        <td>${t.name}</td><td>${t.role}</td><td>${t.functions.join(', ')}</td>
        <td>${t.expiresAt ? html`<${Time} t=${t.expiresAt} />` : html`<span class="muted">never</span>`}</td>
        <td><${Time} t=${t.created} /></td><td>${t.lastUsed ? html`<${Time} t=${t.lastUsed} />` : html`<span class="muted">never</span>`}</td>
        <td><${Revoke} name=${t.name} reload=${list.reload} /></td>
      </tr>`)}
      ${list.data.length === 0 && html`<tr><td colspan="7" class="muted">No token.</td></tr>`}
    </tbody></table>`}
    <${CreateToken} reload=${list.reload} />`;
}

function Revoke({ name, reload }) {
  const op = useOp();
  return html`<button disabled=${op.busy} onClick=${() => op.run(async () => {
    if (!window.confirm(`Revoke the token ${name}? It is refused from now on.`)) return null;
    await gql(`mutation($input: RevokeTokenInput!) { revokeToken(input: $input) { revoked } }`, { input: { name } });
    reload();
    return null;
  })}>Revoke</button><${Msg} m=${op.msg} />`;
}

function CreateToken({ reload }) {
  const [v, setV] = useState({ name: '', role: 'READER', functions: '', expiresAt: '' });
  const [secret, setSecret] = useState(null);
  const op = useOp();
  const set = (k) => (e) => setV({ ...v, [k]: e.target.value });
  return html`<h2>New token</h2><form class="op" aria-label="New token" onSubmit=${(e) => { e.preventDefault(); op.run(async () => {
    const functions = v.functions.split(',').map((f) => f.trim()).filter((f) => f);
    const d = await gql(`mutation($input: CreateTokenInput!) { createToken(input: $input) { secret token { name } } }`, {
      input: { name: v.name, role: v.role, ...(functions.length ? { functions } : {}), ...(v.expiresAt ? { expiresAt: fromLocalInput(v.expiresAt) } : {}) } });
    setSecret({ name: d.createToken.token.name, secret: d.createToken.secret });
    setV({ ...v, name: '' });
    reload();
    return null;
  }); }}>
    <label>Name<input value=${v.name} onInput=${set('name')} required /></label>
    <label>Role<select aria-label="Role" value=${v.role} onChange=${set('role')}>${['ADMIN', 'OPERATOR', 'READER', 'WORKER'].map((r) => html`<option value=${r}>${r}</option>`)}</select></label>
    <label>Functions (WORKER, comma-separated)<input value=${v.functions} onInput=${set('functions')} /></label>
    <label>Expires<input type="datetime-local" value=${v.expiresAt} onInput=${set('expiresAt')} /></label>
    <button type="submit" class="primary" disabled=${op.busy}>Create</button><${Msg} m=${op.msg} />
  </form>
  ${secret && html`<div class="banner" role="status" aria-label="New token secret">
    <p>The secret of <strong>${secret.name}</strong>, shown this once (only its hash is stored):</p>
    <code data-secret>${secret.secret}</code>
    <button type="button" onClick=${() => setSecret(null)}>I have copied it</button>
  </div>`}`;
}
