// A user task's form on the workflow page, rendered from its JSON Schema: a submission the API
// refuses (INVALID_INPUT) shows its message by the form, a valid one moves the workflow on.
//
// usage: node form.mjs http://127.0.0.1:PORT WORKFLOW_ID
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';

const [base, id] = process.argv.slice(2);
const local = new Set(['127.0.0.1', 'localhost']);
const escaped = [];
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
try {
  const context = await browser.newContext();
  await context.route('**/*', (route) => {
    if (local.has(new URL(route.request().url()).hostname)) return route.continue();
    escaped.push(route.request().url());
    return route.abort('blockedbyclient');
  });
  const page = await context.newPage();
  await page.goto(base + '/ui/#/workflow?id=' + encodeURIComponent(id));
  await page.waitForSelector('h1 .status.MANUAL');
  const form = page.getByRole('form', { name: 'Form of state review' });
  await form.getByText('Form: Review the order').waitFor();

  // The score must be at least 1: the API refuses 0, and the message shows by the form.
  await form.getByLabel('Score').fill('0');
  await form.getByLabel('Submitted by').fill('ann');
  await form.getByRole('button', { name: 'Submit form' }).click();
  const refusal = form.getByRole('alert');
  await refusal.waitFor();
  assert.match(await refusal.innerText(), /INVALID_INPUT/);

  await form.getByLabel('Score').fill('4');
  await form.getByLabel('Approved (required)').check();
  await form.getByLabel('Level').selectOption('high');
  await form.getByLabel('Note').fill('looks right');
  await form.getByRole('button', { name: 'Submit form' }).click();
  await page.waitForSelector('h1 .status.FINISHED');
  await page.getByRole('table', { name: 'Form submissions' }).getByRole('cell', { name: 'ann', exact: true }).waitFor();
  assert.deepEqual(escaped, []);
  console.log('ok');
} finally {
  await browser.close();
}
