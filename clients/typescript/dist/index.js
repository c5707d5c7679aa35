/**
 * @cairnflow/client: start, operate and follow cairn workflows (Client), and serve remote functions
 * for them (Worker), through cairn's GraphQL API.
 */
export { Client, ENDED, WORKFLOW_FIELDS } from './client.js';
export { CairnError, ConnectionFailed, Problem } from './errors.js';
export { DEFAULT_CONCURRENCY, DEFAULT_POLLERS, MAX_COMPLETE_BATCH, MAX_POLL, Worker } from './worker.js';
