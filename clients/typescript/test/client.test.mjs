// Client against the real cairn: start, get, wait, the operations, events, and errors.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { CairnError, Client, ConnectionFailed, Worker } from '../dist/index.js';
import { ADMIN_TOKEN, URL_, Proxy, admin, deploy, needsServer, serving, sleep } from './support.mjs';

describe('Client', needsServer, () => {
  const client = admin();
  const serve = serving(client);

  test('starts, gets and waits for a workflow', async () => {
    const { type, fn } = await deploy(client);
    await serve({ [fn]: async (input) => ({ echo: input }) });
    const started = await client.startWorkflow(type, { input: { a: 1 }, businessKey: 'order-7', externalId: 'ext-1' });
    assert.equal(started.type, type);
    assert.equal(started.businessKey, 'order-7');
    assert.equal((await client.getWorkflow(started.id)).id, started.id);
    const ended = await client.wait(started.id, { timeoutMs: 60000 });
    assert.equal(ended.status, 'FINISHED');
    assert.deepEqual(ended.output, { echo: { a: 1 } });
    const again = await client.startWorkflow(type, { input: { a: 2 }, externalId: 'ext-1' });
    assert.equal(again.id, started.id, 'the same external ID returns the workflow already started');
  });

  test('wait times out', async () => {
    const { type } = await deploy(client); // nobody serves its function
    const wf = await client.startWorkflow(type);
    // cairn pings this suite's streams every second (--ping-interval 1s): the pings must not hold
    // wait past its timeout (they once did, for as long as the workflow did not end).
    const t0 = Date.now();
    let guard;
    const stuck = new Promise((resolve) => { guard = setTimeout(() => resolve('still waiting after 30 s'), 30000); });
    const outcome = await Promise.race([client.wait(wf.id, { timeoutMs: 3500 }).catch((e) => e), stuck]);
    clearTimeout(guard);
    assert.equal(outcome.name, 'TimeoutError', String(outcome));
    assert.match(outcome.message, /did not end within 3500 ms \(last seen [A-Z]+\)/);
    assert.ok(Date.now() - t0 < 10000);
  });

  test('pauses, resumes and cancels', async () => {
    const { type } = await deploy(client);
    const wf = await client.startWorkflow(type);
    assert.equal((await client.pause(wf.id, { reason: 'looking' })).status, 'PAUSED');
    assert.notEqual((await client.resume(wf.id)).status, 'PAUSED');
    await client.cancel(wf.id, { reason: 'not needed' });
    assert.equal((await client.wait(wf.id, { timeoutMs: 30000 })).status, 'CANCELLED');
    await assert.rejects(client.pause(wf.id), (e) => e instanceof CairnError && e.code === 'CONFLICT');
  });

  test('signals', async () => {
    const name = `signal-${Date.now()}`;
    await client.graphql('mutation($s: String!) { deployDefinition(input: {source: $s}) { created } }', {
      s: `
document: {dsl: '1.0.0', namespace: ts, name: ${name}, version: '1.0.0'}
do:
  - approval:
      listen:
        to:
          one:
            with:
              type: approve
`,
    });
    const wf = await client.startWorkflow(`ts.${name}`);
    const deadline = Date.now() + 30000;
    while ((await client.getWorkflow(wf.id)).waitingForSignal !== 'approve') {
      assert.ok(Date.now() < deadline, 'the workflow never waited for its signal');
      await sleep(50);
    }
    await client.signal(wf.id, 'approve', { payload: { by: 'ann' } });
    assert.equal((await client.wait(wf.id, { timeoutMs: 30000 })).status, 'FINISHED');
  });

  test('retries a failed workflow', async () => {
    const { type, fn } = await deploy(client);
    let calls = 0;
    await serve({ [fn]: async () => { if (++calls === 1) throw new Error('first call fails'); return 'second call works'; } });
    const wf = await client.startWorkflow(type);
    assert.equal((await client.wait(wf.id, { timeoutMs: 60000 })).status, 'FAILED');
    await client.retry(wf.id, { reason: 'fixed' });
    const ended = await client.wait(wf.id, { timeoutMs: 60000 });
    assert.equal(ended.status, 'FINISHED');
    assert.equal(ended.output, 'second call works');
  });

  test('errors carry code and field', async () => {
    await assert.rejects(client.startWorkflow('no.such-type'), (e) => e instanceof CairnError && e.code === 'INVALID_INPUT' && e.field === 'type');
    await assert.rejects(client.getWorkflow('not-an-id'), (e) => e instanceof CairnError && e.code === 'INVALID_INPUT' && e.field === 'id');
  });

  test('a wrong URL or token is one clear error', async () => {
    const dead = new Client({ url: 'http://127.0.0.1:9/graphql' });
    const t0 = Date.now();
    await assert.rejects(dead.getWorkflow('x'), (e) => e instanceof ConnectionFailed && e.message.includes('http://127.0.0.1:9/graphql'));
    await assert.rejects(new Worker(dead, { functions: { f: async () => null } }).start(), ConnectionFailed);
    assert.ok(Date.now() - t0 < 10000, 'no retries at the first call');

    const wrongPath = new Client({ url: URL_.replace('/graphql', '/nothing'), token: ADMIN_TOKEN });
    await assert.rejects(wrongPath.getWorkflow('x'), (e) => e instanceof ConnectionFailed && e.message.includes("not cairn's GraphQL endpoint"));

    const wrongToken = new Client({ url: URL_, token: 'not-a-token' });
    const unauthenticated = (e) => e instanceof CairnError && e.code === 'UNAUTHENTICATED';
    await assert.rejects(wrongToken.startWorkflow('x'), unauthenticated);
    await assert.rejects(new Worker(wrongToken, { functions: { f: async () => null } }).start(), unauthenticated);
    await assert.rejects(wrongToken.events().next(), unauthenticated);

    assert.throws(() => new Client({ url: 'ftp://example.com/graphql' }), ConnectionFailed);
  });

  test('events resume after a dropped connection', async () => {
    const { type, fn } = await deploy(client);
    await serve({ [fn]: async (input) => input });
    const proxy = await new Proxy(URL_).listen();
    after(() => proxy.close());
    const watcher = new Client({ url: proxy.url, token: ADMIN_TOKEN });
    const events = [];
    const ids = [];
    const total = 6;
    const follow = (async () => {
      for await (const e of watcher.events({ filter: { types: [type] } })) {
        events.push(e);
        const finished = new Set(events.filter((x) => x.status === 'FINISHED').map((x) => x.workflowId));
        if (ids.length === total && ids.every((id) => finished.has(id))) return;
      }
    })();
    // Events come from the moment the subscription is in place: start workflows until one shows.
    while (events.length === 0) {
      await client.startWorkflow(type, { input: { n: -1 } });
      await sleep(200);
    }
    const cut = async () => { // cut the stream: it resumes from its cursor, on a new connection
      const before = proxy.accepted;
      proxy.drop();
      const deadline = Date.now() + 30000;
      while (proxy.accepted === before) {
        assert.ok(Date.now() < deadline, 'the stream did not resume');
        await sleep(10);
      }
    };
    await cut();
    for (let n = 0; n < total; n++) {
      ids.push((await client.startWorkflow(type, { input: { n } })).id);
      if (n === 2) await cut();
    }
    let timer;
    const stopped = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`the events stopped: ${JSON.stringify(events)}`)), 60000); });
    await Promise.race([follow, stopped]).finally(() => clearTimeout(timer));
    const cursors = events.map((e) => e.cursor);
    assert.equal(new Set(cursors).size, cursors.length, 'an event came twice');
    for (const id of ids) {
      const types = events.filter((e) => e.workflowId === id).map((e) => e.type);
      assert.equal(types[0], 'CREATED', `the first event of ${id} was missed: ${types}`);
    }

    // after: every event after a cursor, then live ones.
    const replay = [];
    for await (const e of client.events({ filter: { types: [type] }, after: cursors[0] })) {
      replay.push(e.cursor);
      if (replay.length === cursors.length - 1) break;
    }
    assert.deepEqual(replay, cursors.slice(1));
  });
});
