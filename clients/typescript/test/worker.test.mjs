// Worker against the real cairn: failures as Problems, heartbeats, a killed worker, concurrent
// workers, worker tokens, and stop().
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, describe, test } from 'node:test';

import { CairnError, Client, Problem, Worker } from '../dist/index.js';
import { ADMIN_TOKEN, CATCH, URL_, WORKER_FUNCTION, WORKER_TOKEN, admin, deploy, needsServer, remoteAttempts, serving, sleep } from './support.mjs';

describe('Worker', needsServer, () => {
  const client = admin();
  const serve = serving(client);

  test('a throwing function fails its task and the worker goes on', async () => {
    const { type, fn } = await deploy(client);
    const w = await serve({
      [fn]: async (input) => {
        if (input.weightKg < 0) throw new RangeError(`weight ${input.weightKg} is negative`);
        return { price: 2 * input.weightKg };
      },
    }, { onError: () => {} });
    const bad = await client.startWorkflow(type, { input: { weightKg: -1 } });
    const failed = await client.wait(bad.id, { timeoutMs: 60000 });
    assert.equal(failed.status, 'FAILED');
    assert.match(failed.lastError, /"title":"RangeError"/);
    assert.match(failed.lastError, /"detail":"weight -1 is negative"/);
    const good = await client.startWorkflow(type, { input: { weightKg: 3 } });
    assert.deepEqual((await client.wait(good.id, { timeoutMs: 60000 })).output, { price: 6 });
    await w.stop(); // the counts are the worker's once it has read cairn's answers
    assert.deepEqual([w.stats.failed, w.stats.completed], [1, 1]);
  });

  test('a Problem is what the workflow catches', async () => {
    const { type, fn } = await deploy(client, CATCH);
    await serve({
      [fn]: async (input) => { throw new Problem({ status: 422, title: 'Refused', detail: `no rate for ${input.country}`, type: 'https://example.com/no-rate' }); },
    });
    const wf = await client.startWorkflow(type, { input: { country: 'XX' } });
    const ended = await client.wait(wf.id, { timeoutMs: 60000 });
    assert.equal(ended.status, 'FINISHED');
    const { title, status, detail, type: problemType } = ended.output.problem;
    assert.deepEqual([title, status, detail, problemType], ['Refused', 422, 'no rate for XX', 'https://example.com/no-rate']);
  });

  test('heartbeats keep a long task', async () => {
    const { type, fn } = await deploy(client);
    const calls = [];
    await serve({ [fn]: async (_, task) => { calls.push(task.attempt); await sleep(5000); return task.signal.aborted ? 'lost' : 'done'; } }, { leaseMs: 1500 }); // more than three leases
    const wf = await client.startWorkflow(type);
    const ended = await client.wait(wf.id, { timeoutMs: 60000 });
    assert.deepEqual([ended.status, ended.output], ['FINISHED', 'done']);
    assert.deepEqual(calls, [1], 'the task was offered again while its worker heartbeated it');
    assert.deepEqual(await remoteAttempts(client, wf.id, fn), [[1, 'SUCCEEDED']]);
  });

  test("a killed worker's task is offered again and completed once", async () => {
    const { type, fn } = await deploy(client);
    const script = `
      import { Client, Worker } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};
      const [url, token, fn] = process.argv.slice(-3);
      const w = new Worker(new Client({ url, token }), { leaseMs: 1500, name: 'doomed', functions: {
        [fn]: async () => { console.log('holding'); await new Promise(() => {}); } } });
      await w.start();
      setInterval(() => {}, 1000);
    `;
    const doomed = spawn(process.execPath, ['--input-type=module', '-e', script, URL_, ADMIN_TOKEN, fn], { stdio: ['ignore', 'pipe', 'inherit'] });
    after(() => doomed.kill('SIGKILL'));
    const wf = await client.startWorkflow(type);
    const [line] = await once(doomed.stdout, 'data');
    assert.equal(String(line).trim(), 'holding', 'the worker did not take the task');
    doomed.kill('SIGKILL');
    await once(doomed, 'exit');

    const calls = [];
    await serve({ [fn]: async (_, task) => { calls.push(task.attempt); return 'served once'; } }, { name: 'survivor' });
    const ended = await client.wait(wf.id, { timeoutMs: 60000 });
    assert.deepEqual([ended.status, ended.output], ['FINISHED', 'served once']);
    assert.deepEqual(calls, [2], 'the task came back once its lease ran out, as attempt 2');
    const attempts = await remoteAttempts(client, wf.id, fn);
    assert.equal(attempts.filter(([, s]) => s === 'SUCCEEDED').length, 1, JSON.stringify(attempts));
    assert.ok(attempts.some(([a, s]) => a === 2 && s === 'SUCCEEDED'), JSON.stringify(attempts));
  });

  test('concurrent workers never get the same task', async () => {
    const { type, fn } = await deploy(client);
    const served = [];
    const record = async (input, task) => { served.push(task.id); await sleep(5); return input.n; };
    const ws = [];
    for (let i = 0; i < 3; i++) ws.push(await serve({ [fn]: record }, { client: new Client({ url: URL_, token: ADMIN_TOKEN }), concurrency: 4, name: `w${i}` }));
    const n = 150;
    const data = await client.graphql('mutation($in: StartWorkflowsInput!) { startWorkflows(input: $in) { results { workflow { id } } } }', {
      in: { workflows: Array.from({ length: n }, (_, i) => ({ type, input: { n: i } })) },
    });
    const ids = data.startWorkflows.results.map((r) => r.workflow.id);
    for (const [i, id] of ids.entries()) {
      const ended = await client.wait(id, { timeoutMs: 120000 });
      assert.deepEqual([ended.status, ended.output], ['FINISHED', i]);
    }
    await Promise.all(ws.map((w) => w.stop()));
    assert.equal(served.length, n);
    assert.equal(new Set(served).size, n, 'a task was served twice');
    assert.equal(ws.reduce((s, w) => s + w.stats.completed, 0), n);
    assert.equal(ws.reduce((s, w) => s + w.stats.dropped + w.stats.failed, 0), 0);
    assert.ok(ws.filter((w) => w.stats.completed > 0).length > 1, 'one worker served everything');
  });

  test('a worker token serves its function only', async () => {
    const { type } = await deploy(client, undefined, WORKER_FUNCTION);
    const workerClient = new Client({ url: URL_, token: WORKER_TOKEN });
    await serve({ [WORKER_FUNCTION]: async () => 'served with a worker token' }, { client: workerClient });
    const wf = await client.startWorkflow(type);
    assert.equal((await client.wait(wf.id, { timeoutMs: 60000 })).output, 'served with a worker token');
    const forbidden = (e) => e instanceof CairnError && e.code === 'FORBIDDEN';
    await assert.rejects(new Worker(workerClient, { functions: { 'another.function': async () => null } }).start(), forbidden);
    await assert.rejects(workerClient.startWorkflow(type), forbidden);
  });

  test('stop finishes the tasks it holds', async () => {
    const { type, fn } = await deploy(client);
    let entered = 0;
    const w = new Worker(client, { functions: { [fn]: async (input) => { entered++; await sleep(1000); return input; } }, concurrency: 3 });
    await w.start();
    const ids = [];
    for (const i of [1, 2, 3]) ids.push((await client.startWorkflow(type, { input: { i } })).id);
    const deadline = Date.now() + 30000;
    while (entered < 3) {
      assert.ok(Date.now() < deadline, 'the worker did not take the three tasks');
      await sleep(10);
    }
    const t0 = Date.now();
    await w.stop();
    assert.ok(Date.now() - t0 < 15000);
    assert.equal(w.stats.completed, 3);
    for (const id of ids) assert.equal((await client.wait(id, { timeoutMs: 60000 })).status, 'FINISHED');
  });

  test('an output that is not JSON fails the task', async () => {
    const { type, fn } = await deploy(client);
    await serve({ [fn]: async () => ({ big: 10n }) }, { onError: () => {} });
    const wf = await client.startWorkflow(type);
    const ended = await client.wait(wf.id, { timeoutMs: 60000 });
    assert.equal(ended.status, 'FAILED');
    assert.match(ended.lastError, /Output Not JSON/);
  });
});
