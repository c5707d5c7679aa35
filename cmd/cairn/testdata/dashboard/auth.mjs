// The dashboard of a `cairn serve --auth --demo`: the page loads without a token and asks for one;
// with it, the list loads over HTTP and live updates arrive over the websocket (the token in its
// connection_init). Prints "ok".
//
// usage: node auth.mjs http://127.0.0.1:PORT TOKEN
import assert from 'node:assert/strict';
import { launchLocal } from './local.mjs';

const [base, token] = process.argv.slice(2);

const { browser, context, escaped } = await launchLocal();
try {
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
