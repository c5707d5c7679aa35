// Drives the dashboard of a running `cairn serve --demo` in Chromium, as a person would: the
// workflows list and its paging and filters, a live update, a workflow's page, cancel, retry of a
// MANUAL workflow, buttons disabled by status and a refused operation, filters that combine,
// counts and rows that follow live changes out of the filter, a bulk action confirmed with its
// count and filter, children kept under their parents (fork branches and sub-workflows),
// executors and schedules paged, counts shown as estimates above the node's
// --exact-count-up-to (CAIRN_COUNT_ESTIMATES=true where the database estimates), the remote
// workers page, a stuck workflow with its reason and search attributes. Any request to a host other than the
// machine's fails the run. Prints one JSON object per measurement, then "ok".
//
// usage: node dashboard.mjs http://127.0.0.1:PORT [screenshot-dir]
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';
import { graphql } from './local.mjs';

const [base, shots] = process.argv.slice(2);
const estimates = process.env.CAIRN_COUNT_ESTIMATES === 'true';
const ui = base + '/ui/';
const local = new Set(['127.0.0.1', 'localhost', '[::1]']);
const escaped = [];

const gql = graphql(base);
const start = (input) => gql(`mutation($i: StartWorkflowInput!) { startWorkflow(input: $i) { workflow { id created status } } }`, { i: input }).then((d) => d.startWorkflow.workflow);
const statusOf = (id) => gql(`query($id: ID!) { workflow(id: $id) { status state } }`, { id }).then((d) => d.workflow);
const childrenOf = (id) => gql(`query($id: ID!) { workflow(id: $id) { children(first: 10) { nodes { id } } } }`, { id }).then((d) => d.workflow.children.nodes.map((c) => c.id));
const act = (op, id) => gql(`mutation($id: ID!) { ${op}(input: {id: $id}) { workflow { id } } }`, { id });
const hashParams = (page) => page.evaluate(() => Object.fromEntries(new URLSearchParams(location.hash.split('?')[1] || '')));
const report = (name, value, unit) => console.log(JSON.stringify({ measure: name, value, unit }));
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

async function eventually(what, fn, ms = 15000) {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  // Every request and websocket goes through here: one to any other host is refused and recorded.
  await context.route('**/*', (route) => {
    const host = new URL(route.request().url()).hostname;
    if (local.has(host) || route.request().url().startsWith('data:')) return route.continue();
    escaped.push(route.request().url());
    return route.abort('blockedbyclient');
  });
  await context.routeWebSocket(/.*/, (ws) => {
    if (local.has(new URL(ws.url()).hostname)) { ws.connectToServer(); return; }
    escaped.push(ws.url());
    ws.close();
  });
  const page = await context.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });

  // The guard itself: a fetch to an outside address is caught and recorded.
  await page.goto(base + '/healthz');
  await page.evaluate(() => fetch('http://192.0.2.1/probe').catch(() => null));
  assert.deepEqual(escaped, ['http://192.0.2.1/probe'], 'the request guard caught the probe');
  escaped.length = 0;
  pageErrors.length = 0;

  // 120 waiting workflows: more than two pages of the list.
  const seed = Array.from({ length: 120 }, (_, i) => ({ type: 'demo.approval', businessKey: 'seed-' + i }));
  await gql(`mutation($i: StartWorkflowsInput!) { startWorkflows(input: $i) { results { created } } }`, { i: { workflows: seed } });
  const manual = await start({ type: 'demo.fanout', input: { children: -1 }, businessKey: 'manual' });
  await eventually('the fanout to need a person', async () => (await statusOf(manual.id)).status === 'MANUAL');

  // The list: its first render, counts, paging.
  // First render: from navigation to the first page of workflows drawn, as the page measures it;
  // the first load of the browser (nothing cached), then again.
  for (const name of ['firstRenderCold', 'firstRenderWarm']) {
    await page.goto(ui + '?' + name);
    await page.waitForSelector('table[data-loaded="true"] tbody tr[data-id]');
    await page.waitForFunction(() => window.cairnFirstRender);
    report(name, Math.round(await page.evaluate(() => window.cairnFirstRender)), 'ms');
  }
  assert.equal(await page.locator('tbody tr[data-id]').count(), 50, 'a page holds 50 workflows');
  // The node counts exactly up to 100 workflows (--exact-count-up-to 100): above, PostgreSQL and
  // MariaDB answer with an estimate, shown as one ("~"); SQLite counts in full.
  if (estimates) {
    await page.waitForSelector('.stats[data-total-estimate="true"]');
    const all = await page.locator('.stats button[aria-pressed]').first().innerText();
    assert.match(all, /^All ~\d/, 'the estimated total shows as one: ' + all);
    assert.ok(await page.locator('.stats .estimate[data-estimate="true"]').count() >= 1);
  } else {
    await page.waitForSelector('.stats[data-total="121"][data-total-estimate="false"]');
  }
  const firstId = await page.locator('tbody tr[data-id]').first().getAttribute('data-id');
  assert.equal(firstId, manual.id, 'newest first');
  await page.getByRole('button', { name: /Next 50/ }).click();
  await page.waitForFunction((id) => document.querySelector('tbody tr[data-id]')?.dataset.id !== id, firstId);
  await page.getByRole('button', { name: /Previous 50/ }).click();
  await page.waitForFunction((id) => document.querySelector('tbody tr[data-id]')?.dataset.id === id, firstId);

  // Filters: by business key.
  await page.getByLabel('Business key').fill('seed-7');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-id]').length === 1);
  await page.waitForSelector('.stats[data-total="1"][data-total-estimate="false"]'); // a filter below the limit: exact
  await page.getByRole('button', { name: 'Clear' }).click();
  await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-id]').length === 50);

  // Live: workflows started elsewhere appear on the open page; the time from their commit to
  // their row in the page is measured by the page's own clock (same machine as the server).
  await page.waitForSelector('.live.on');
  await page.evaluate(() => {
    window.cairnSeen = {};
    new MutationObserver(() => {
      for (const tr of document.querySelectorAll('tbody tr[data-id]')) if (!window.cairnSeen[tr.dataset.id]) window.cairnSeen[tr.dataset.id] = Date.now();
    }).observe(document.querySelector('tbody'), { childList: true, subtree: true });
    for (const tr of document.querySelectorAll('tbody tr[data-id]')) window.cairnSeen[tr.dataset.id] = 1;
  });
  const delays = [];
  let live;
  for (let i = 0; i < 5; i++) {
    live = await start({ type: 'demo.approval', businessKey: 'live-' + i });
    await page.waitForSelector(`tbody tr[data-id="${live.id}"]`);
    const seen = await page.evaluate((id) => window.cairnSeen[id], live.id);
    delays.push(seen - Date.parse(live.created));
  }
  report('eventToPageMedian', median(delays), 'ms');
  report('eventToPageMax', Math.max(...delays), 'ms');
  // A change of status shows too.
  await gql(`mutation($id: ID!) { signalWorkflow(input: {id: $id, name: "approve"}) { workflow { id } } }`, { id: live.id });
  await page.waitForSelector(`tbody tr[data-id="${live.id}"] .status.FINISHED`);

  // Opening a workflow: the MANUAL one, its graph and its error; then retry it from a state.
  await page.locator(`tbody tr[data-id="${manual.id}"] a`).click();
  await page.waitForSelector('h1 .status.MANUAL');
  await page.waitForSelector('svg.graph[data-current="spawn"]');
  await page.getByText('children must be between 0 and 10000, not -1').first().waitFor();
  await page.getByLabel('Retry from state').selectOption('await');
  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: 'Retry', exact: true }).click();
  await page.waitForSelector('h1 .status.FINISHED');
  assert.equal((await statusOf(manual.id)).status, 'FINISHED');

  // A finished workflow: the operations its status does not allow are disabled, each saying why.
  for (const name of ['Pause', 'Resume', 'Wake up', 'Cancel', 'Retry', 'Send signal']) {
    const button = page.getByRole('button', { name, exact: true });
    assert.ok(await button.isDisabled(), name + ' is disabled on a FINISHED workflow');
    assert.match(await button.getAttribute('title'), /^FINISHED: /, name + ' says why');
  }
  // A refused operation: scheduling a finished workflow without moving it is a CONFLICT, shown
  // by its control; the page keeps working.
  await page.getByText('Update state, schedule or variables').click();
  await page.getByLabel('Next activation').fill('2031-01-02T03:04');
  await page.getByRole('button', { name: 'Update', exact: true }).click();
  const refusal = page.getByRole('group', { name: 'Update' }).getByRole('alert');
  await refusal.waitFor();
  assert.match(await refusal.innerText(), /CONFLICT/);
  await page.getByRole('button', { name: 'Show the variables after the action' }).first().click();
  await page.getByText('after this action').first().waitFor();

  // Cancel with its button, confirmed.
  const toCancel = await start({ type: 'demo.approval', businessKey: 'cancel-me' });
  await eventually('the approval to wait', async () => (await statusOf(toCancel.id)).status === 'WAITING');
  await page.goto(ui + '#/workflow?id=' + encodeURIComponent(toCancel.id));
  await page.waitForSelector('h1 .status.WAITING');
  assert.ok(await page.getByRole('button', { name: 'Resume', exact: true }).isDisabled(), 'Resume only for PAUSED');
  assert.ok(await page.getByRole('button', { name: 'Retry', exact: true }).isDisabled(), 'Retry only for MANUAL or FAILED');
  assert.ok(await page.getByRole('button', { name: 'Pause', exact: true }).isEnabled());
  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: 'Cancel', exact: true }).click();
  await page.waitForSelector('h1 .status.CANCELLED');
  assert.equal((await statusOf(toCancel.id)).status, 'CANCELLED');

  // Two fan-outs wait for a child each (still shipping): WAITING workflows of another type than
  // the approvals.
  const fanouts = [];
  for (const k of [1, 2]) fanouts.push(await start({ type: 'demo.fanout', input: { children: 1, childInput: { shipDelayMs: 120000 } }, businessKey: 'fan-' + k }));
  for (const f of fanouts) await eventually('the fan-out to wait for its child', async () => (await statusOf(f.id)).status === 'WAITING');
  const fanChildren = (await Promise.all(fanouts.map((f) => childrenOf(f.id)))).flat();
  assert.equal(fanChildren.length, 2);

  // Filters combine: a type typed (not applied) and then a status picked apply both.
  const rows = () => page.locator('tbody tr[data-id]').evaluateAll((trs) => trs.map((tr) => ({ id: tr.dataset.id, type: tr.children[2].innerText, left: tr.dataset.left === 'true' })));
  await page.goto(ui + '#/workflows');
  await page.waitForSelector('table[data-loaded="true"] tbody tr[data-id]');
  await page.getByLabel('Type', { exact: true }).fill('demo.fanout');
  await page.getByLabel('Status', { exact: true }).selectOption('WAITING');
  await page.waitForSelector('.stats[data-total="2"]');
  assert.deepEqual(await hashParams(page), { type: 'demo.fanout', status: 'WAITING' });
  // The counts may arrive before the page of rows (two requests): wait for the rows to follow.
  const fanoutIDs = fanouts.map((f) => f.id).sort();
  await eventually('the waiting fan-outs, and nothing else', async () => JSON.stringify((await rows()).map((r) => r.id).sort()) === JSON.stringify(fanoutIDs));
  // Counts and rows follow live changes, also those that take a workflow out of the filter.
  await act('pauseWorkflow', fanouts[1].id);
  await page.waitForSelector(`tbody tr[data-id="${fanouts[1].id}"][data-left="true"] .status.PAUSED`);
  await page.waitForSelector('.stats[data-total="1"]');
  assert.ok(await page.getByLabel('Select workflow ' + fanouts[1].id).isDisabled(), 'a row out of the filter cannot be selected');

  // Bulk: select every approval waiting on the page; the pause shows what it will touch (its
  // count and the list's filter) before it runs, and touches only those.
  await page.getByRole('button', { name: 'Clear' }).click();
  await page.waitForFunction(() => !location.hash.includes('status='));
  await page.getByLabel('Type', { exact: true }).fill('demo.approval');
  await page.getByLabel('Status', { exact: true }).selectOption('WAITING');
  assert.deepEqual(await hashParams(page), { type: 'demo.approval', status: 'WAITING' });
  const shown = await eventually('a page of waiting approvals only', async () => {
    const r = await rows();
    return r.length === 50 && r.every((x) => x.type === 'demo.approval') && r;
  });
  await page.getByLabel('Select every workflow of the page').check();
  const bulk = page.getByRole('group', { name: 'Bulk actions on the selected workflows' });
  assert.ok(await bulk.getByRole('button', { name: 'Resume selected' }).isDisabled(), 'no WAITING workflow can be resumed');
  assert.ok(await bulk.getByRole('button', { name: 'Retry selected' }).isDisabled(), 'no WAITING workflow can be retried');
  await bulk.getByRole('button', { name: 'Pause selected' }).click();
  const confirmBox = page.getByRole('alertdialog', { name: 'Confirm the bulk action' });
  await confirmBox.waitFor();
  assert.equal(await confirmBox.getAttribute('data-count'), '50');
  const said = await confirmBox.innerText();
  assert.match(said, /Pause 50 workflows/);
  assert.match(said, /type demo\.approval · status WAITING · top-level only/);
  for (const r of shown) assert.equal((await statusOf(r.id)).status, 'WAITING', 'nothing ran before the confirmation');
  await confirmBox.getByRole('button', { name: 'Pause 50 workflows' }).click();
  await page.getByText('Pause: 50 done.').waitFor();
  for (const r of shown) assert.equal((await statusOf(r.id)).status, 'PAUSED', r.id);
  assert.equal((await statusOf(fanouts[0].id)).status, 'WAITING', 'a workflow of another type is not touched');

  // Children stay under their parents: fork branches (a deployed Serverless Workflow document)
  // and the fan-outs' sub-workflows are left out of the default list, shown on request and on
  // their parent's page.
  const forkDoc = { document: { dsl: '1.0.0', namespace: 'uitest', name: 'fork', version: '1.0.0' },
    do: [{ both: { fork: { branches: [{ left: { set: { side: 'left' } } }, { right: { set: { side: 'right' } } }] } } }] };
  await gql(`mutation($s: String!) { deployDefinition(input: {source: $s}) { created } }`, { s: JSON.stringify(forkDoc) });
  const fork = await start({ type: 'uitest.fork', input: {} });
  await eventually('the fork to finish', async () => (await statusOf(fork.id)).status === 'FINISHED');
  const branches = await childrenOf(fork.id);
  assert.equal(branches.length, 2);
  await page.goto(ui + '#/workflows');
  await page.waitForSelector(`tbody tr[data-id="${fork.id}"]`);
  const listed = new Set((await rows()).map((r) => r.id));
  for (const id of [...branches, ...fanChildren]) assert.ok(!listed.has(id), 'a child is not a top-level row: ' + id);
  await page.getByLabel('Show', { exact: true }).selectOption('all');
  for (const id of branches) await page.waitForSelector(`tbody tr[data-id="${id}"]`);
  assert.equal((await hashParams(page)).level, 'all');
  await page.goto(ui + '#/workflow?id=' + encodeURIComponent(fork.id));
  const childRows = page.getByRole('table', { name: 'Children' }).locator('tbody tr');
  await childRows.first().waitFor();
  assert.equal(await childRows.count(), 2);
  // From there, the list of its children alone.
  await page.getByRole('link', { name: /children in the workflows list/ }).click();
  await page.getByRole('status').filter({ hasText: 'Children of workflow' }).waitFor();
  await eventually('the list of the fork\'s branches', async () => {
    const r = (await rows()).map((x) => x.id).sort();
    return r.length === 2 && r.join() === [...branches].sort().join();
  });
  for (const f of fanouts) await act('cancelWorkflow', f.id); // their children stop shipping

  // Remote workers: one polls (for a function with no task), and the page lists it.
  await page.goto(ui + '#/remote-workers');
  await page.getByText('No remote worker has polled yet.').waitFor();
  await gql(`mutation { pollTasks(input: {functions: ["billing.charge", "billing.refund"], worker: "ui-test-worker"}) { tasks { id } } }`);
  await page.getByRole('button', { name: 'Refresh' }).click();
  const worker = page.getByRole('table', { name: 'Remote workers' }).locator('tr[data-worker="ui-test-worker"]');
  await worker.waitFor();
  const cells = await worker.locator('td').allInnerTexts();
  assert.equal(cells[0], 'ui-test-worker');
  assert.equal(cells[1], 'billing.charge, billing.refund');
  assert.equal(cells[3], '0');
  await page.getByRole('navigation', { name: 'Sections' }).getByRole('link', { name: 'Remote workers' }).waitFor();

  // Executors: the node's own, alive; schedules: paged by 50 with first/after.
  await page.goto(ui + '#/executors');
  await page.getByRole('table', { name: 'Executors' }).locator('tbody tr').first().getByText('alive').waitFor();
  for (let i = 0; i < 51; i++) {
    await gql(`mutation($c: String!) { createSchedule(input: {type: "demo.approval", cron: $c}) { schedule { id } } }`, { c: '@every ' + (3600 + i) + 's' });
  }
  await page.goto(ui + '#/schedules');
  const scheduleRows = page.getByRole('table', { name: 'Schedules' }).locator('tbody tr[data-id]');
  await scheduleRows.first().waitFor();
  assert.equal(await scheduleRows.count(), 50, 'a page holds 50 schedules');
  await page.getByRole('navigation', { name: 'Pages of schedules' }).getByRole('button', { name: /Next 50/ }).click();
  await page.waitForFunction(() => document.querySelectorAll('table[aria-label="Schedules"] tbody tr[data-id]').length === 1);
  assert.match(await scheduleRows.first().innerText(), /@every 3650s/);
  await page.getByRole('button', { name: /Previous 50/ }).click();
  await page.waitForFunction(() => document.querySelectorAll('table[aria-label="Schedules"] tbody tr[data-id]').length === 50);

  // Stuck workflows: one waits for a remote function no worker polls. "Stuck only" lists it with
  // its reason; its page shows the reason and its search attributes.
  const doc = { document: { dsl: '1.0.0', namespace: 'ui', name: 'stuck', version: '1.0.0' }, do: [{ ask: { call: 'nobody.serves' } }] };
  const deployed = await gql(`mutation($s: String!) { deployDefinition(input: {source: $s}) { definition { type } } }`, { s: JSON.stringify(doc) });
  const stuck = await start({ type: deployed.deployDefinition.definition.type, attributes: { team: 'ui-test' } });
  await eventually('the call to wait for a worker', async () => (await statusOf(stuck.id)).status === 'WAITING');
  await page.goto(ui + '#/workflows');
  await page.waitForSelector('table[data-loaded="true"]');
  await page.getByLabel('Stuck only').check();
  const stuckRow = page.locator(`tbody tr[data-id="${stuck.id}"]`);
  await stuckRow.locator('[data-testid="stuck"]').waitFor();
  assert.match(await stuckRow.locator('.stuck-reason').innerText(), /nobody\.serves/);
  assert.equal((await hashParams(page)).stuck, '1');
  await page.goto(ui + '#/workflow?id=' + encodeURIComponent(stuck.id));
  assert.match(await page.getByTestId('stuck-reason').innerText(), /no remote worker polled function "nobody\.serves"/);
  await page.getByRole('heading', { name: 'Search attributes' }).waitFor();
  await page.getByText('ui-test').first().waitFor();
  await act('cancelWorkflow', stuck.id);

  if (shots) {
    await page.goto(ui + '#/workflows');
    await page.waitForSelector('table[data-loaded="true"] tbody tr[data-id]');
    await page.screenshot({ path: shots + '/workflows.png' });
    const order = await start({ type: 'demo.order', input: { amount: 42, failFirstCharge: true }, businessKey: 'order-42' });
    await eventually('the order to finish', async () => (await statusOf(order.id)).status === 'FINISHED');
    await page.goto(ui + '#/workflow?id=' + encodeURIComponent(order.id));
    await page.waitForSelector('h1 .status.FINISHED');
    await page.screenshot({ path: shots + '/workflow.png', fullPage: true });
    await page.goto(ui + '#/definition?type=demo.order');
    await page.waitForSelector('svg.graph');
    await page.screenshot({ path: shots + '/definition.png' });
  }

  assert.deepEqual(escaped, [], 'no request left the machine');
  assert.deepEqual(pageErrors, [], 'the page logged no error');
  console.log('ok');
} finally {
  await browser.close();
}
