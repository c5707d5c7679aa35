// The API tokens page and schedule edit/delete of a `cairn serve --auth --demo`, as an admin: make an
// OPERATOR token (its secret shown once) that then acts but may not manage tokens, revoke it (refused
// from then on), and edit and delete a named schedule. Prints "ok".
//
// usage: node tokens.mjs http://127.0.0.1:PORT ADMIN_TOKEN
import assert from 'node:assert/strict';
import { launchLocal } from './local.mjs';

const [base, token] = process.argv.slice(2);

async function call(secret, query, variables) {
  const res = await fetch(base + '/graphql', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + secret },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, body: await res.json() };
}

const { browser, context, escaped } = await launchLocal();
try {
  const page = await context.newPage();
  page.on('dialog', (d) => d.accept());
  await page.goto(base + '/ui/#/tokens');
  const login = page.getByRole('form', { name: 'API token' });
  await login.getByLabel(/API token/).fill(token);
  await login.getByRole('button', { name: 'Save' }).click();
  const table = page.getByRole('table', { name: 'API tokens' });
  await table.locator('tr[data-name="dashboard"]').waitFor();

  // Make an OPERATOR token: the secret is shown once, and it works.
  const form = page.getByRole('form', { name: 'New token' });
  await form.getByLabel('Name').fill('ops');
  await form.getByRole('combobox', { name: 'Role' }).selectOption('OPERATOR');
  await form.getByRole('button', { name: 'Create' }).click();
  const secret = (await page.locator('[data-secret]').innerText()).trim();
  assert.match(secret, /^cairn_/);
  await table.locator('tr[data-name="ops"]').waitFor();
  assert.match(await table.locator('tr[data-name="ops"]').innerText(), /OPERATOR/);
  let r = await call(secret, 'mutation { startWorkflow(input: {type: "demo.approval"}) { created } }');
  assert.equal(r.body.errors, undefined, JSON.stringify(r.body));
  r = await call(secret, '{ tokens { name } }');
  assert.equal(r.body.errors[0].extensions.code, 'FORBIDDEN');

  // Revoke it: refused from then on, gone from the list.
  await table.locator('tr[data-name="ops"]').getByRole('button', { name: 'Revoke' }).click();
  await table.locator('tr[data-name="ops"]').waitFor({ state: 'detached' });
  r = await call(secret, '{ workflows(first: 1) { totalCount } }');
  assert.equal(r.status, 401);

  // A named schedule: edit its cron, then delete it.
  r = await call(token, 'mutation { createSchedule(input: {type: "demo.approval", cron: "@daily", name: "nightly"}) { schedule { id } } }');
  const id = r.body.data.createSchedule.schedule.id;
  await page.goto(base + '/ui/#/schedules');
  const row = page.locator(`tr[data-id="${id}"]`);
  await row.getByRole('button', { name: 'Edit' }).click();
  const edit = page.getByRole('form', { name: 'Edit schedule ' + id });
  await edit.getByLabel('Cron').fill('0 6 * * *');
  await edit.getByRole('button', { name: 'Save' }).click();
  await edit.waitFor({ state: 'detached' });
  r = await call(token, '{ schedule(name: "nightly") { cron } }');
  assert.equal(r.body.data.schedule.cron, '0 6 * * *');
  await row.getByRole('button', { name: 'Delete' }).click();
  await row.waitFor({ state: 'detached' });
  r = await call(token, '{ schedule(name: "nightly") { id } }');
  assert.equal(r.body.data.schedule, null);
  assert.deepEqual(escaped, []);
  console.log('ok');
} finally {
  await browser.close();
}
