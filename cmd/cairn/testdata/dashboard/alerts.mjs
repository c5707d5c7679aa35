// The alert rules page of a `cairn serve --demo --http-allow 127.0.0.1`: a webhook on a private
// address not allowed is refused with the field named; a rule made on the page alerts a local
// receiver when a workflow is cancelled, its delivery shows DELIVERED, and the rule is deleted.
// Prints "ok".
//
// usage: node alerts.mjs http://127.0.0.1:PORT
import assert from 'node:assert/strict';
import http from 'node:http';
import { launchLocal, graphql } from './local.mjs';

const [base] = process.argv.slice(2);

const bodies = [];
const receiver = http.createServer((req, res) => {
  let b = '';
  req.on('data', (c) => { b += c; });
  req.on('end', () => { bodies.push(JSON.parse(b)); res.end('ok'); });
});
await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
const hook = `http://127.0.0.1:${receiver.address().port}/hook`;

const gql = graphql(base);

const { browser, context, escaped } = await launchLocal();
try {
  const page = await context.newPage();
  page.on('dialog', (d) => d.accept());
  await page.goto(base + '/ui/#/alerts');
  await page.getByRole('link', { name: 'Alert rules' }).waitFor();
  await page.getByText('No alert rule.').waitFor();

  const form = page.getByRole('form', { name: 'New alert rule' });
  await form.getByLabel('Name').fill('cancellations');
  await form.getByLabel('FAILED').uncheck();
  await form.getByLabel('CANCELLED').check();
  await form.getByLabel('Webhook URL').fill('http://10.9.8.7/hook');
  await form.getByRole('button', { name: 'Create' }).click();
  await form.getByRole('alert').waitFor();
  assert.match(await form.getByRole('alert').innerText(), /webhook/i);
  assert.deepEqual((await gql('{ alertRules { id } }')).alertRules, [], 'a refused rule changes nothing');

  await form.getByLabel('Webhook URL').fill(hook);
  await form.getByRole('button', { name: 'Create' }).click();
  const rules = page.getByRole('table', { name: 'Alert rules' });
  await rules.getByText('cancellations').waitFor();
  assert.match(await rules.innerText(), /every type/);

  const id = (await gql('mutation { startWorkflow(input: {type: "demo.approval"}) { workflow { id } } }')).startWorkflow.workflow.id;
  await gql(`mutation { cancelWorkflow(input: {id: "${id}", reason: "alert test"}) { workflow { id } } }`);
  const deliveries = page.getByRole('table', { name: 'Alert deliveries' });
  for (let i = 0; ; i++) {
    await page.reload();
    await rules.waitFor();
    if (await deliveries.count() && /DELIVERED/.test(await deliveries.innerText())) break;
    assert.ok(i < 100, 'the delivery never showed DELIVERED');
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.match(await deliveries.innerText(), /cancellations\s+demo\.approval\s+CANCELLED/);
  assert.equal(bodies.length, 1);
  assert.equal(bodies[0].id, id);
  assert.equal(bodies[0].status, 'CANCELLED');
  assert.equal(bodies[0].rule, 'cancellations');

  await rules.getByRole('button', { name: 'Delete' }).click();
  await page.getByText('No alert rule.').waitFor();
  assert.deepEqual(escaped, []);
  console.log('ok');
} finally {
  await browser.close();
  receiver.close();
}
