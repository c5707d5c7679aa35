// What the dashboard's browser scripts share: Chromium launched headless with nothing of its own
// reaching the network, a context whose requests to another host than this machine are refused
// and listed in escaped, and a GraphQL client of the node under test.
import { chromium } from 'playwright-core';

const local = new Set(['127.0.0.1', 'localhost', '[::1]']);

export async function launchLocal(contextOptions = {}) {
  const escaped = [];
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  const context = await browser.newContext(contextOptions);
  await context.route('**/*', (route) => {
    if (local.has(new URL(route.request().url()).hostname)) return route.continue();
    escaped.push(route.request().url());
    return route.abort('blockedbyclient');
  });
  return { browser, context, escaped };
}

// graphql returns a function that sends a query to the node at base and returns its data (it
// throws the errors of a refused one).
export function graphql(base) {
  return async (query, variables = {}) => {
    const res = await fetch(base + '/graphql', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ query, variables }) });
    const body = await res.json();
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data;
  };
}
