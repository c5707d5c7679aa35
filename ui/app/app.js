// The dashboard's shell: navigation, the API token, the live-connection indicator and the router.
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { getToken, setToken, onAuthNeeded, onLiveChange, isLive } from './api.js';
import { html, useRoute } from './lib.js';
import { WorkflowsPage } from './workflows.js';
import { WorkflowPage } from './workflow.js';
import { TokensPage } from './tokens.js';
import { OperationsPage } from './operations.js';
import { AuditPage } from './audit.js';
import { DefinitionsPage, DefinitionPage, SchedulesPage, ExecutorsPage, RemoteWorkersPage } from './pages.js';
import { AlertsPage } from './alerts.js';
import { LimitsPage } from './limits.js';

const pages = {
  '/workflows': { title: 'Workflows', page: WorkflowsPage, nav: true },
  '/workflow': { title: 'Workflow', page: WorkflowPage, section: '/workflows' },
  '/definitions': { title: 'Definitions', page: DefinitionsPage, nav: true },
  '/definition': { title: 'Definition', page: DefinitionPage, section: '/definitions' },
  '/schedules': { title: 'Schedules', page: SchedulesPage, nav: true },
  '/executors': { title: 'Executors', page: ExecutorsPage, nav: true },
  '/remote-workers': { title: 'Remote workers', page: RemoteWorkersPage, nav: true },
  '/tokens': { title: 'API tokens', page: TokensPage, nav: true },
  '/alerts': { title: 'Alert rules', page: AlertsPage, nav: true },
  '/limits': { title: 'Limits', page: LimitsPage, nav: true },
  '/operations': { title: 'Bulk operations', page: OperationsPage, nav: true },
  '/audit': { title: 'Audit log', page: AuditPage, nav: true },
};

function TokenForm({ close, reason }) {
  const [t, setT] = useState(getToken());
  return html`<form class="banner" aria-label="API token" onSubmit=${(e) => { e.preventDefault(); setToken(t.trim()); close(true); }}>
    ${reason && html`<p role="alert"><strong>${reason}</strong></p>`}
    <label>API token (kept in this browser; sent as Authorization: Bearer)
      <input type="password" autocomplete="off" value=${t} onInput=${(e) => setT(e.target.value)} autofocus />
    </label>
    <button type="submit" class="primary">Save</button>
    <button type="button" onClick=${() => { setToken(''); setT(''); close(true); }}>Forget the token</button>
    <button type="button" onClick=${() => close(false)}>Close</button>
  </form>`;
}

function App() {
  const route = useRoute();
  const [auth, setAuth] = useState(null); // null, or the reason the token form is shown
  const [generation, setGeneration] = useState(0); // bumped to reload the page after a new token
  const [live, setLive] = useState(isLive());
  useEffect(() => onAuthNeeded((e) => setAuth(e.message)), []);
  useEffect(() => onLiveChange(setLive), []);
  const p = pages[route.path] || pages['/workflows'];
  useEffect(() => { document.title = p.title + ' · cairn'; }, [p]);
  // A keyboard or screen-reader user who follows a link lands on the new page, not on the link.
  const first = useRef(true);
  useEffect(() => {
    if (first.current) { first.current = false; return; }
    document.getElementById('main').focus();
  }, [route.path, route.params.get('id'), route.params.get('type')]);
  const Page = p.page;
  const section = p.section || route.path;
  return html`
    <a class="skip" href="#main" onClick=${(e) => { e.preventDefault(); document.getElementById('main').focus(); }}>Skip to content</a>
    <header class="top">
      <a class="brand" href="#/workflows">cairn</a>
      <nav aria-label="Sections">
        ${Object.entries(pages).filter(([, v]) => v.nav).map(([path, v]) => html`<a href=${'#' + path} aria-current=${section === path ? 'page' : null}>${v.title}</a>`)}
      </nav>
      <div class="right">
        <span class=${'live ' + (live ? 'on' : live === false ? 'off' : '')} role="status" aria-live="polite">${live ? 'live' : live === false ? 'not live' : ''}</span>
        <button onClick=${() => setAuth(auth === null ? '' : null)}>API token${getToken() ? ' (set)' : ''}</button>
        <a href="../" style="color:#dbe6f3">GraphiQL</a>
      </div>
    </header>
    <main id="main" tabindex="-1">
      ${auth !== null && html`<${TokenForm} reason=${auth} close=${(changed) => { setAuth(null); if (changed) setGeneration((g) => g + 1); }} />`}
      <${Page} key=${route.path + '#' + generation} params=${route.params} />
    </main>`;
}

const root = document.getElementById('root');
root.textContent = ''; // the loading note
render(html`<${App} />`, root);
