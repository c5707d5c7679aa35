// A cairn remote worker in Node (18 or later), with @cairnflow/client (clients/typescript).
//
// It serves the function shipping.quote: the library long-polls cairn for its tasks, heartbeats
// them while they run, completes them in batches, and fails a task with the Problem its function
// throws.
//
//   CAIRN_URL=http://127.0.0.1:8080/graphql CAIRN_TOKEN=... node worker.mjs --name node-1
//
// CAIRN_TOKEN is a worker token: cairn token create --name node --role worker --functions shipping.quote
//
// In a project of your own, install the library (npm install <clone>/clients/typescript) and import
// from '@cairnflow/client'; this example imports it from the clone, where it runs without a build.
import { Client, Problem, Worker } from '../../clients/typescript/dist/index.js';

const URL = process.env.CAIRN_URL ?? 'http://127.0.0.1:8080/graphql';
const TOKEN = process.env.CAIRN_TOKEN || undefined;
const LEASE_MS = Number(process.env.CAIRN_LEASE_MS ?? 30000);
const nameAt = process.argv.indexOf('--name');
const NAME = nameAt > 0 ? process.argv[nameAt + 1] : 'node-worker';

// Price per kg and currency, by destination.
const RATES = { DE: [4.5, 'EUR'], FI: [6.0, 'EUR'], US: [9.0, 'USD'] };

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function quote(args, task) {
  args ??= {};
  if (task.attempt === 1 && args.sleepOnFirstAttemptMs) await sleep(args.sleepOnFirstAttemptMs);
  const rate = RATES[args.country];
  // Not retryable: the workflow's try catches it (status 422).
  if (!rate) throw new Problem({ status: 422, title: 'Refused', detail: `no rate for country ${JSON.stringify(args.country)}` });
  return { price: Math.round(rate[0] * Number(args.weightKg) * 100) / 100, currency: rate[1], servedBy: NAME };
}

const worker = new Worker(new Client({ url: URL, token: TOKEN }), {
  functions: { 'shipping.quote': quote }, concurrency: 4, leaseMs: LEASE_MS, name: NAME,
});
await worker.start();
console.log(`worker ${NAME} polling ${URL}`);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    await worker.stop(); // finishes the tasks it holds
    process.exit(0);
  });
}
