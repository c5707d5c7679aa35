// The limits page of a `cairn serve --demo`: a concurrency limit set through the page's form, the
// key's running and waiting workflows shown per key, the waiting workflow's page saying why it is
// held back and under which key, a refused limit showing the server's error, and the run-time
// limit cleared. No request may leave the machine. Prints "ok".
//
// usage: node limits.mjs http://127.0.0.1:PORT
import assert from 'node:assert/strict';
import { launchLocal, graphql } from './local.mjs';

const [base] = process.argv.slice(2);
const gql = graphql(base);

async function until(what, check) {
  for (let i = 0; i < 600; i++) {
    const v = await check();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('timed out waiting for ' + what);
}

const { browser, context, escaped } = await launchLocal();
try {
  const page = await context.newPage();
  page.on('dialog', (d) => d.accept());

  // A limit of 0 is refused, the error shown by the form; a limit of 1 per key is set.
  await page.goto(base + '/ui/#/limits');
  const form = page.getByRole('form', { name: 'Set limits' });
  await form.waitFor();
  await form.getByLabel('Type').fill('demo.approval');
  await form.getByLabel('Limit per key').fill('0');
  await form.getByRole('button', { name: 'Set' }).click();
  await form.getByText(/INVALID_INPUT/).waitFor();
  await form.getByLabel('Limit per key').fill('1');
  await form.getByRole('button', { name: 'Set' }).click();
  await form.getByText('Limits set.').waitFor();
  const section = page.getByRole('region', { name: 'Limits of demo.approval' });
  await section.waitFor();
  assert.match(await section.innerText(), /Concurrency: 1 per key, scope WORKFLOW, when full QUEUE/);

  // Two workflows of key cust-7: the first holds the slot (it waits for its signal), the second waits.
  const start = (key) => gql(`mutation($i: StartWorkflowInput!) { startWorkflow(input: $i) { workflow { id } } }`,
    { i: { type: 'demo.approval', concurrencyKey: key } }).then((d) => d.startWorkflow.workflow.id);
  const first = await start('cust-7');
  await until('the first to hold its slot', async () => (await gql(`{ workflow(id: "${first}") { status } }`)).workflow.status === 'WAITING');
  const second = await start('cust-7');
  const reason = await until('the second to be held back', async () => (await gql(`{ workflow(id: "${second}") { blockedReason } }`)).workflow.blockedReason);
  assert.match(reason, /concurrency key cust-7: 1 of 1 running/);

  await page.reload(); // the page read the limits before the workflows started
  const keys = page.getByRole('table', { name: 'Keys of demo.approval' });
  await keys.waitFor();
  assert.match(await keys.locator('tr', { hasText: 'cust-7' }).innerText(), /cust-7\s+1\s+1/);

  await page.goto(base + '/ui/#/workflow?id=' + encodeURIComponent(second));
  assert.match(await page.getByTestId('blocked-reason').innerText(), /concurrency key cust-7: 1 of 1 running/);
  assert.equal(await page.getByTestId('concurrency-key').innerText(), 'cust-7');

  // Cleared: the page lists no limit of demo.approval, and the second workflow runs.
  await page.goto(base + '/ui/#/limits');
  await page.getByRole('region', { name: 'Limits of demo.approval' }).getByRole('button', { name: 'Clear run-time limits' }).click();
  await page.getByRole('region', { name: 'Limits of demo.approval' }).waitFor({ state: 'detached' });
  await until('the second to run', async () => (await gql(`{ workflow(id: "${second}") { status } }`)).workflow.status === 'WAITING');

  assert.deepEqual(escaped, [], 'requests left the machine');
  console.log('ok');
} finally {
  await browser.close();
}
