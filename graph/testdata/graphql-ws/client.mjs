// Usage: node client.mjs <ws-url> <query> <variables-json> <take>
// Subscribes with the graphql-ws client and prints one JSON line per message it gets (the data,
// or the errors), then "complete" when the server completes the subscription, and exits. With
// take > 0 it unsubscribes (and exits) after that many messages.
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

const [url, query, variables, take] = process.argv.slice(2);
const client = createClient({ url, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true });
let got = 0;
const done = (code) => client.dispose().then(() => process.exit(code));
const unsubscribe = client.subscribe(
  { query, variables: JSON.parse(variables) },
  {
    next: (msg) => {
      if (Number(take) > 0 && got >= Number(take)) return; // unsubscribing
      console.log(JSON.stringify(msg));
      got++;
      if (Number(take) > 0 && got >= Number(take)) {
        unsubscribe();
        done(0);
      }
    },
    error: (err) => {
      console.log(JSON.stringify({ clientError: Array.isArray(err) ? err : String(err.message || err) }));
      done(0);
    },
    complete: () => {
      console.log('complete');
      done(0);
    },
  },
);
