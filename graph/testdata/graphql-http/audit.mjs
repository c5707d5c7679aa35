// Usage: node audit.mjs <url>. Prints each audit that is not "ok", then one JSON line with the
// number of MUST and SHOULD audits that failed.
import { serverAudits } from 'graphql-http';

const url = process.argv[2];
let must = 0;
let should = 0;
for (const audit of serverAudits({ url, fetchFn: fetch })) {
  const result = await audit.fn();
  if (result.status === 'ok') continue;
  if (audit.name.startsWith('MUST')) must++;
  if (audit.name.startsWith('SHOULD')) should++;
  console.log(`${result.status}: ${audit.name}: ${result.reason}`);
}
console.log(JSON.stringify({ must, should }));
