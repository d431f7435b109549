'use strict';
// A client over a rate limit, for the rate-limit tests: `lanes` loops of requests, each on a
// fresh connection (so they spread over the workers), for `ms` milliseconds. Resolves with the
// count per status, the bodies of the 200s (a script answers its worker's pid) and every
// Retry-After seen. `url` may be a list: the requests take its entries in turn (several hosts). Usable in-process (hammer()) or as a process in a network namespace:
//   node rate-client.js URL LANES MS PAUSE_MS   -> one JSON line
const http = require('node:http');

function hammer(url, { lanes = 4, ms = 2000, pauseMs = 0, headers = {} } = {}) {
  const agent = new http.Agent({ keepAlive: false });
  const result = { statuses: {}, bodies: new Map(), retryAfter: new Set(), errors: 0, elapsedMs: 0 };
  const urls = Array.isArray(url) ? url : [url];
  let sent = 0;
  const startedAt = Date.now();
  const one = () => new Promise((resolve) => {
    const req = http.get(urls[sent++ % urls.length], { agent, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { body += chunk; });
      res.on('end', () => {
        result.statuses[res.statusCode] = (result.statuses[res.statusCode] || 0) + 1;
        if (res.statusCode === 200) result.bodies.set(body, (result.bodies.get(body) || 0) + 1);
        if (res.headers['retry-after'] !== undefined) result.retryAfter.add(res.headers['retry-after']);
        resolve();
      });
    });
    req.on('error', () => { result.errors++; resolve(); });
  });
  const lane = async () => {
    while (Date.now() - startedAt < ms) {
      await one();
      if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  };
  return Promise.all(Array.from({ length: lanes }, lane)).then(() => {
    result.elapsedMs = Date.now() - startedAt;
    agent.destroy();
    return result;
  });
}

if (require.main === module) {
  const [url, lanes, ms, pauseMs] = process.argv.slice(2);
  hammer(url, { lanes: Number(lanes), ms: Number(ms), pauseMs: Number(pauseMs) }).then((result) => {
    process.stdout.write(`${JSON.stringify({ ...result, bodies: Object.fromEntries(result.bodies), retryAfter: [...result.retryAfter] })}\n`);
  });
}

module.exports = { hammer };
