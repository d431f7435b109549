'use strict';
// An endpoint that throws in a callback, hit twice a second,
// made 333 of 396 probes fail (ECONNREFUSED; the crash backoff grew to 15 s), and one crash under
// load cut idle keep-alive connections (0 ms grace). Now a worker that served requests is
// replaced at once (the backoff is for workers that die before serving: a crash loop at start),
// it keeps accepting until its replacement listens, and its idle connections get a grace.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { startServer, request } = require('../support/helpers');

const SCRIPT = String.raw`
if (href === '/async-throw') {
  disableEndElseCallbackExecute = true;
  setTimeout(function () { throw new Error('thrown in a timer'); }, 1);
  return;
}
`;

const ROUNDS = 6;

// Requests in a loop until stopped: `fresh` connections each time, or keep-alive ones.
function probe(url, { keepAlive }) {
  const agent = keepAlive ? new http.Agent({ keepAlive: true, maxSockets: 8 }) : false;
  const stats = { ok: 0, failed: [] };
  let running = true;
  const loop = async () => {
    while (running) {
      try {
        const res = await request(url, { agent });
        if (res.status === 200) stats.ok++; else stats.failed.push(`status ${res.status}`);
      } catch (error) {
        stats.failed.push(error.code || error.message);
      }
    }
  };
  const loops = Array.from({ length: keepAlive ? 8 : 2 }, loop);
  return { stats, stop: async () => { running = false; await Promise.all(loops); if (agent) agent.destroy(); return stats; } };
}

test('repeated crashes of serving workers: no backoff, no refused connection, no cut keep-alive connection', async () => {
  const server = await startServer({
    config: { useWebRootServerSideScript: true },
    files: { 'serverSideScript.js': SCRIPT, 'ok.txt': 'ok\n' },
    args: ['--workers', '2'],
  });
  const fresh = probe(`${server.url}/ok.txt`, { keepAlive: false });
  const kept = probe(`${server.url}/ok.txt`, { keepAlive: true });
  try {
    // A request may land on a worker that is already recycling (it serves until its replacement
    // listens): that crash recycles nothing new. Go on until ROUNDS workers have recycled.
    const recycled = () => server.stderr().filter((l) => /recycling after an uncaught exception/.test(l)).length;
    for (let attempt = 0; attempt < 4 * ROUNDS && recycled() < ROUNDS; attempt++) {
      const since = server.stderr().length;
      const before = recycled();
      // The attacker's own request: a 500, or cut if it landed on a worker already going.
      const res = await request(`${server.url}/async-throw`).catch(() => null);
      if (res === null) continue;
      assert.equal(res.status, 500);
      await server.waitForLog(/uncaught exception while serving GET \/async-throw/, 'stderr', since);
      if (recycled() > before || await server.waitForLog(/recycling after/, 'stderr', since, 500).catch(() => false)) {
        await server.waitForLog(/worker \d+ ready/, 'stderr', since);
      }
    }
    assert.equal(recycled(), ROUNDS);
    const delays = server.stderr().map((l) => /starting a replacement worker in (\d+) ms/.exec(l)).filter(Boolean).map((m) => Number(m[1]));
    assert.equal(delays.length, ROUNDS);
    assert.deepEqual(delays, Array(ROUNDS).fill(0), 'a worker that served is replaced without delay');
    const freshStats = await fresh.stop();
    const keptStats = await kept.stop();
    assert.ok(freshStats.ok > 20 && keptStats.ok > 20, `probes made requests (${freshStats.ok}, ${keptStats.ok})`);
    assert.deepEqual(freshStats.failed, [], 'no new connection was refused or failed');
    assert.deepEqual(keptStats.failed, [], 'no keep-alive connection was cut');
  } finally {
    await fresh.stop();
    await kept.stop();
    await server.stop();
  }
});

// A worker that dies before serving anything still backs off (a crash loop at start): shown by
// supervisor.test.js, "a worker that keeps dying young is restarted with growing delays".
