'use strict';
// schedulingPolicy: "none" (the default) lets the workers accept; "rr" has the primary hand
// connections to the workers in turn.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { startServer, request, readyWorkerPids } = require('../support/helpers');

const PID_SCRIPT = "if (req.url === '/pid') { disableEndElseCallbackExecute = true; res.writeHead(200, { 'Content-Type': 'text/plain' }); res.end(String(process.pid)); }\n";

// With "none" the worker that wakes first accepts a whole burst (all 5 on one worker in 6 to 16 of
// 30 trials on the 2-core machine); round-robin gives the first two to different workers, always.
test('"rr": five connections opened at once never all reach one worker (10 bursts)', async () => {
  const server = await startServer({
    config: { workers: 2, schedulingPolicy: 'rr' },
    files: { 'serverSideScript.js': PID_SCRIPT },
    env: { NODE_CLUSTER_SCHED_POLICY: '' }, // the config decides, not the environment
  });
  try {
    const workers = readyWorkerPids(server).map(String).sort();
    assert.equal(workers.length, 2);
    for (let burst = 0; burst < 10; burst++) {
      const answers = await Promise.all(Array.from({ length: 5 }, () => request(`${server.url}/pid`, { agent: false })));
      const served = answers.map((res) => res.text);
      assert.deepEqual([...new Set(served)].sort(), workers, `burst ${burst}: served by ${served.join(', ')}`);
    }
  } finally {
    await server.stop();
  }
});

test('"none", the default, serves', async () => {
  const server = await startServer({
    config: { workers: 2 },
    files: { 'serverSideScript.js': PID_SCRIPT },
    env: { NODE_CLUSTER_SCHED_POLICY: '' },
  });
  try {
    const res = await request(`${server.url}/pid`, { agent: false });
    assert.equal(res.status, 200);
    assert.ok(readyWorkerPids(server).map(String).includes(res.body.toString()));
  } finally {
    await server.stop();
  }
});
