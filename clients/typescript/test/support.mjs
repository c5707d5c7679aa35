// What the suites share: the server under test (from the environment the Go test sets), documents
// deployed per test, and a TCP proxy that can drop connections.
import { randomBytes } from 'node:crypto';
import net from 'node:net';

import { after } from 'node:test';

import { Client, Worker } from '../dist/index.js';

export const URL_ = process.env.CAIRN_URL ?? '';
export const ADMIN_TOKEN = process.env.CAIRN_ADMIN_TOKEN ?? '';
export const WORKER_TOKEN = process.env.CAIRN_WORKER_TOKEN ?? '';
export const WORKER_FUNCTION = process.env.CAIRN_WORKER_FUNCTION ?? '';

/** Options for describe: skipped without a server (run through go test ./clients/). */
export const needsServer = URL_ ? {} : { skip: 'CAIRN_URL is not set: run these tests through go test ./clients/' };

export const admin = () => new Client({ url: URL_, token: ADMIN_TOKEN });

/** Returns serve(functions, opts), which starts a worker (on client unless opts.client) stopped after the suite. */
export function serving(client) {
  const workers = [];
  after(async () => { await Promise.all(workers.map((w) => w.stop())); });
  return async (functions, opts = {}) => {
    const w = new Worker(opts.client ?? client, { functions, ...opts });
    await w.start();
    workers.push(w);
    return w;
  };
}

export const CALL = (name, fn) => `
document: {dsl: '1.0.0', namespace: ts, name: ${name}, version: '1.0.0'}
do:
  - work:
      call: ${fn}
`;

export const CATCH = (name, fn) => `
document: {dsl: '1.0.0', namespace: ts, name: ${name}, version: '1.0.0'}
do:
  - work:
      try:
        - call:
            call: ${fn}
      catch:
        errors:
          with:
            status: 422
        as: problem
        do:
          - caught:
              set:
                problem: \${ $problem }
              then: end
`;

/** Deploys a fresh document calling a function of its own (or fn); returns its type and the function. */
export async function deploy(client, template = CALL, fn = undefined) {
  const name = `t-${randomBytes(5).toString('hex')}`;
  fn ??= `ts.${name}`;
  await client.graphql('mutation($s: String!) { deployDefinition(input: {source: $s}) { created } }', { s: template(name, fn) });
  return { type: `ts.${name}`, fn };
}

/** The [attempt, status] of each task instance of the function's remote task, sorted. */
export async function remoteAttempts(client, id, fn) {
  const data = await client.graphql('query($id: ID!) { workflow(id: $id) { taskInstances(first: 50) { nodes { taskType attempt status } } } }', { id });
  return data.workflow.taskInstances.nodes
    .filter((n) => n.taskType === `remote:${fn}`)
    .map((n) => [n.attempt, n.status])
    .sort((a, b) => a[0] - b[0] || a[1].localeCompare(b[1]));
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Forwards TCP connections to cairn; drop() cuts every open one. */
export class Proxy {
  constructor(target) {
    const u = new URL(target);
    this.accepted = 0;
    this.sockets = new Set();
    this.server = net.createServer((client) => {
      this.accepted++;
      const upstream = net.connect(Number(u.port), u.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('error', () => {});
        s.on('close', () => { this.sockets.delete(s); client.destroy(); upstream.destroy(); });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    this.path = u.pathname;
  }

  async listen() {
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${this.server.address().port}${this.path}`;
    return this;
  }

  drop() {
    for (const s of this.sockets) s.destroy();
  }

  async close() {
    this.drop();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
