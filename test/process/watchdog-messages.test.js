'use strict';
// The stall watchdog costs the primary O(1) messages per heartbeat interval, not one per script
// request: a worker notes a request entering user code only when no note went since its last
// heartbeat. Counted from the primary's side, over real script requests.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { startServer, request, makeTempDir, waitUntil } = require('../support/helpers');

const STALL_MS = 4000; // heartbeats every second (at most a quarter of the timeout, at most 1 s)
const INTERVAL_MS = 1000;
const REQUESTS = 300;

test('script requests do not each send the primary a message', async () => {
  const dir = makeTempDir('svr-ipc-count-');
  const countFile = path.join(dir, 'counts.json');
  const preload = path.join(__dirname, '..', 'support', 'count-ipc.js');
  const counts = () => { try { return JSON.parse(fs.readFileSync(countFile, 'utf8')); } catch { return {}; } };
  const server = await startServer({
    config: { workerStallTimeout: STALL_MS, useWebRootServerSideScript: true },
    files: { 'serverSideScript.js': 'res.writeHead(200, { "Content-Type": "text/plain" }); res.end("Hello World!");' },
    env: { NODE_OPTIONS: `--require ${preload}`, IPC_COUNT_FILE: countFile },
  });
  try {
    assert.ok(await waitUntil(() => (counts().heartbeat || 0) >= 1), 'the primary counted a first heartbeat');
    const before = counts().heartbeat;
    const startedAt = Date.now();
    for (let i = 0; i < REQUESTS; i++) {
      const res = await request(`${server.url}/hello?i=${i}`);
      assert.equal(res.status, 200);
      assert.equal(res.text, 'Hello World!');
    }
    const elapsedMs = Date.now() - startedAt;
    const heartbeats = counts().heartbeat - before;
    // Per interval that began or ended within the requests: one timed beat and at most one note.
    // The requests share one kept-alive connection; its opening adds one early beat (its busy
    // count) and the note after it. On a loaded machine the requests span a timed beat, so both
    // parts of the bound are reached.
    const allowed = 2 * (Math.ceil(elapsedMs / INTERVAL_MS) + 1) + 2;
    assert.ok(allowed < REQUESTS / 2, `the requests took ${elapsedMs} ms: too slow for the count to mean anything`);
    assert.ok(heartbeats <= allowed, `${heartbeats} heartbeat messages for ${REQUESTS} script requests in ${elapsedMs} ms (at most ${allowed})`);
  } finally {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
