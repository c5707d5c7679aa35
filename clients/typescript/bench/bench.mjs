// Measures a Worker with default settings serving no-op tasks against a running cairn.
//
//   npm run bench -- --url http://127.0.0.1:8080/graphql [--token T] [--tasks 20000] [--concurrency N]
//
// It deploys a document calling the function bench.remote_noop, starts --tasks workflows of it,
// waits until each waits for its task, then runs a Worker until it has completed them all and
// prints the tasks completed per second (and how long the workflows took to finish after it).
import { parseArgs } from 'node:util';

import { Client, DEFAULT_CONCURRENCY, DEFAULT_POLLERS, Worker } from '../dist/index.js';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:8080/graphql' },
    token: { type: 'string' },
    tasks: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: String(DEFAULT_CONCURRENCY) },
    pollers: { type: 'string', default: String(DEFAULT_POLLERS) },
  },
});
const tasks = Number(args.tasks);
const concurrency = Number(args.concurrency);
const pollers = Number(args.pollers);
const TYPE = 'bench.remote-noop';
const DOCUMENT = `
document: {dsl: '1.0.0', namespace: bench, name: remote-noop, version: '1.0.0'}
do:
  - work:
      call: bench.remote_noop
`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const client = new Client({ url: args.url, token: args.token });
await client.graphql('mutation($s: String!) { deployDefinition(input: {source: $s}) { created } }', { s: DOCUMENT });
const newest = (await client.graphql('query { workflows(first: 1) { nodes { created } } }')).workflows.nodes;
const since = newest.length ? newest[0].created : '1970-01-01T00:00:00Z';
const count = async (status) => {
  const data = await client.graphql('query($f: WorkflowFilter) { workflowStats(filter: $f) { byStatus { status count } } }',
    { f: { types: [TYPE], statuses: [status], createdAfter: since } });
  return data.workflowStats.byStatus.reduce((s, c) => s + c.count, 0);
};

const t0 = performance.now();
for (let i = 0; i < tasks; i += 1000) {
  const n = Math.min(1000, tasks - i);
  await client.graphql('mutation($in: StartWorkflowsInput!) { startWorkflows(input: $in) { results { created } } }',
    { in: { workflows: Array.from({ length: n }, () => ({ type: TYPE })) } });
}
while ((await count('WAITING')) < tasks) await sleep(200);
console.error(`started ${tasks} workflows, each waiting for its task, in ${((performance.now() - t0) / 1000).toFixed(1)}s`);

const worker = new Worker(client, { functions: { 'bench.remote_noop': async () => null }, concurrency, pollers, name: 'bench' });
const t1 = performance.now();
const cpu0 = process.cpuUsage();
await worker.start();
while (worker.stats.completed + worker.stats.failed + worker.stats.dropped < tasks) await sleep(5);
const served = (performance.now() - t1) / 1000;
const cpu = process.cpuUsage(cpu0);
// The worker serves on until every workflow has finished: tasks of an earlier run (its worker
// killed) may have come back to it too.
while ((await count('FINISHED')) < tasks) await sleep(200);
const finished = (performance.now() - t1) / 1000;
await worker.stop();
console.log(JSON.stringify({
  tasks, concurrency, pollers, seconds: Number(served.toFixed(3)), tasks_per_second: Math.round(tasks / served),
  worker_cpu_seconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(3)),
  failed: worker.stats.failed, dropped: worker.stats.dropped, all_finished_seconds: Number(finished.toFixed(3)),
}));
process.exitCode = worker.stats.failed || worker.stats.dropped ? 1 : 0;
