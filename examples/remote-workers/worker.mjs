// A cairn remote worker in Node (20 or later), with no dependencies: plain fetch.
//
// It serves the function shipping.quote: it long-polls cairn's GraphQL API for tasks (pollTasks),
// heartbeats each task while it runs (heartbeatTask), and ends it with completeTask or failTask.
//
//   CAIRN_URL=http://127.0.0.1:8080/graphql CAIRN_TOKEN=... node worker.mjs --name node-1
//
// CAIRN_TOKEN is a worker token: cairn token create --name node --role worker --functions shipping.quote

const URL = process.env.CAIRN_URL ?? 'http://127.0.0.1:8080/graphql';
const TOKEN = process.env.CAIRN_TOKEN ?? '';
const LEASE_MS = Number(process.env.CAIRN_LEASE_MS ?? 30000);
const nameAt = process.argv.indexOf('--name');
const NAME = nameAt > 0 ? process.argv[nameAt + 1] : 'node-worker';

// Price per kg and currency, by destination.
const RATES = { DE: [4.5, 'EUR'], FI: [6.0, 'EUR'], US: [9.0, 'USD'] };

class GraphQLError extends Error {
  constructor(error) {
    super(error.message);
    this.code = error.extensions?.code; // CONFLICT: the lease is lost
  }
}

class Refused extends Error {}

async function gql(query, variables) {
  const headers = { 'Content-Type': 'application/json' };
  if (TOKEN) headers.Authorization = `Bearer ${TOKEN}`;
  const resp = await fetch(URL, { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
  const answer = await resp.json();
  if (answer.errors?.length) throw new GraphQLError(answer.errors[0]);
  return answer.data;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function quote(task) {
  const args = task.input ?? {};
  if (task.attempt === 1 && args.sleepOnFirstAttemptMs) await sleep(args.sleepOnFirstAttemptMs);
  const rate = RATES[args.country];
  if (!rate) throw new Refused(`no rate for country ${JSON.stringify(args.country)}`);
  return { price: Math.round(rate[0] * Number(args.weightKg) * 100) / 100, currency: rate[1], servedBy: NAME };
}

async function end(query, variables) {
  try {
    await gql(query, variables);
  } catch (e) {
    if (e.code !== 'CONFLICT') throw e; // CONFLICT: the lease ran out and another worker has the task
  }
}

async function run(task) {
  // Renew the lease every third of it until the task ends, or the lease is lost.
  const beat = setInterval(() => {
    gql('mutation($t: String!) { heartbeatTask(input: {token: $t}) { deadline } }', { t: task.token })
      .catch((e) => { if (e.code === 'CONFLICT') clearInterval(beat); });
  }, LEASE_MS / 3);
  try {
    const output = await quote(task);
    await end('mutation($t: String!, $o: JSON) { completeTask(input: {token: $t, output: $o}) { id } }', { t: task.token, o: output });
  } catch (e) {
    const refused = e instanceof Refused;
    await end('mutation($t: String!, $e: TaskErrorInput!, $r: Boolean) { failTask(input: {token: $t, error: $e, retryable: $r}) { id } }', {
      t: task.token,
      e: refused ? { status: 422, title: 'Refused', detail: e.message } : { status: 500, title: 'Worker Error', detail: String(e) },
      r: !refused,
    });
  } finally {
    clearInterval(beat);
  }
}

console.log(`worker ${NAME} polling ${URL}`);
for (;;) {
  let tasks;
  try {
    const data = await gql(
      'mutation($in: PollTasksInput!) { pollTasks(input: $in) { tasks { id token function input attempt deadline workflow { id } } } }',
      { in: { functions: ['shipping.quote'], max: 4, waitMs: 20000, leaseMs: LEASE_MS, worker: NAME } },
    );
    tasks = data.pollTasks.tasks;
  } catch (e) {
    console.log(`poll failed: ${e.message}; retrying`);
    await sleep(1000);
    continue;
  }
  await Promise.all(tasks.map(run));
}
