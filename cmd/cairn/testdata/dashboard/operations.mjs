// The bulk operations and audit log pages of a `cairn serve --demo`: the workflows list's "Cancel
// all matching" shows the dry run's count, then the operation's page follows it to its end; the
// list of operations shows it; an operation that could change nothing lists its failures; the
// audit log shows the act and filters by actor. No request may leave the machine. Prints "ok".
//
// usage: node operations.mjs http://127.0.0.1:PORT
import assert from 'node:assert/strict';
import { launchLocal, graphql } from './local.mjs';

const [base] = process.argv.slice(2);
const gql = graphql(base);

const { browser, context, escaped } = await launchLocal();
try {
  const page = await context.newPage();
  page.on('dialog', (d) => d.accept());
  const seed = Array.from({ length: 7 }, () => ({ type: 'demo.approval', businessKey: 'ops-ui' }));
  await gql(`mutation($i: StartWorkflowsInput!) { startWorkflows(input: $i) { results { created } } }`, { i: { workflows: seed } });

  // All matching: the dry run's count first, then the operation's progress to its end.
  await page.goto(base + '/ui/#/workflows?businessKey=ops-ui');
  await page.waitForSelector('table[data-loaded="true"]');
  await page.getByRole('button', { name: 'Cancel all matching' }).click();
  const confirm = page.getByRole('alertdialog', { name: 'Confirm the action on all matching' });
  await confirm.waitFor();
  assert.equal(await confirm.getAttribute('data-total'), '7');
  assert.equal(await confirm.getAttribute('data-would-change'), '7');
  assert.match(await confirm.innerText(), /business key ops-ui/);
  await confirm.getByRole('button', { name: 'Cancel 7 workflows' }).click();
  await page.waitForSelector('section[data-status="SUCCEEDED"]', { timeout: 60000 });
  assert.match(await page.getByTestId('progress-text').innerText(), /7 \/ 7 · 7 ok · 0 failed/);
  const opId = new URL(page.url().replace('#/', '')).searchParams.get('id');
  const left = await gql(`{ workflows(filter: {businessKey: "ops-ui", statuses: [CANCELLED]}) { totalCount } }`);
  assert.equal(left.workflows.totalCount, 7, 'every matching workflow cancelled');

  // The list of operations shows it, linked to its page.
  await page.goto(base + '/ui/#/operations');
  const row = page.locator(`tbody tr[data-id="${opId}"]`);
  await row.waitFor();
  assert.match(await row.innerText(), /CANCEL\s+SUCCEEDED/);

  // An operation that can change nothing: every target a failure, paged with why.
  const again = await gql(`mutation { startBulkOperation(input: {action: CANCEL, filter: {businessKey: "ops-ui"}}) { bulkOperation { id } } }`);
  await page.goto(base + '/ui/#/operations?id=' + again.startBulkOperation.bulkOperation.id);
  await page.waitForSelector('section[data-status="FAILED"]', { timeout: 60000 });
  const failures = page.getByRole('table', { name: 'Failures' }).locator('tbody tr');
  await failures.first().waitFor();
  assert.equal(await failures.count(), 7);
  assert.match(await failures.first().innerText(), /CONFLICT\s+.*already CANCELLED/);

  // The audit log: both operations, by the anonymous actor; another actor's filter shows none.
  await page.goto(base + '/ui/#/audit');
  const audit = page.getByRole('table', { name: 'Audit log, newest first' });
  await audit.waitFor();
  assert.equal(await audit.locator('tbody tr', { hasText: 'startBulkOperation' }).count(), 2);
  await page.getByLabel('Actor').fill('someone-else');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.getByText('No entry matches.').waitFor();
  assert.match(page.url(), /actor=someone-else/);

  assert.deepEqual(escaped, [], 'requests left the machine');
  console.log('ok');
} finally {
  await browser.close();
}
