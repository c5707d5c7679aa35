// The dashboard of a `cairn serve --auth --demo`: the page loads without a token and asks for one;
// with it, the list loads over HTTP and live updates arrive over the websocket (the token in its
// connection_init). Prints "ok".
//
// usage: node auth.mjs http://127.0.0.1:PORT TOKEN
import { chromium } from 'playwright-core';
import assert from 'node:assert/strict';

const [base, token] = process.argv.slice(2);
const local = new Set(['127.0.0.1', 'localhost', '[::1]']);
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
  await page.goto(base + '/ui/');
  const form = page.getByRole('form', { name: 'API token' });
  await form.getByRole('alert').waitFor();
  assert.match(await form.getByRole('alert').innerText(), /token/i);
  await form.getByLabel(/API token/).fill(token);
  await form.getByRole('button', { name: 'Save' }).click();
  await page.waitForSelector('table[data-loaded="true"]');
  await page.waitForSelector('.live.on');

  const res = await fetch(base + '/graphql', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + token },
    body: JSON.stringify({ query: 'mutation { startWorkflow(input: {type: "demo.approval"}) { workflow { id } } }' }),
  });
  const id = (await res.json()).data.startWorkflow.workflow.id;
  await page.waitForSelector(`tbody tr[data-id="${id}"]`);

  // The token stays in the browser: a new page needs no form.
  const again = await context.newPage();
  await again.goto(base + '/ui/');
  await again.waitForSelector(`table[data-loaded="true"] tbody tr[data-id="${id}"]`);
  assert.deepEqual(escaped, []);
  console.log('ok');
} finally {
  await browser.close();
}
