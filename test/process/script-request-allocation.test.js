'use strict';
// What one serverSideScript.js request costs the worker's heap, in bytes (scripts/bench-alloc.js:
// a probe in the worker counts them between two signals; bytes do not depend on the machine's
// load). A hello request allocated 13.4-15.0 KB before the scripting stage was trimmed (Node 20, 22,
// 24), 11.1-11.8 KB after; with a 2 MB young generation a variant of it promoted 3.3 KB per request
// (request objects kept alive across two scavenges) where it now promotes almost none.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { measure, WORKLOADS } = require('../../scripts/bench-alloc');

const SVR = path.join(__dirname, '..', '..', 'svr.js');
const hello = { name: 'hello', ...WORKLOADS.hello, warmUp: 2000 };

test('a hello script request allocates under 12.5 KB and, with a small young generation, promotes under 1 KB', async () => {
  const requests = 3000;
  const figures = await measure('svr', hello, { svr: SVR, connections: 1, requests, nodeOptions: '--max-semi-space-size=2' });
  const kb = (bytes) => bytes / requests / 1024;
  assert.ok(figures.scavenges > 0, 'the window saw scavenges, so promotion was measured');
  assert.ok(kb(figures.allocated) < 12.5, `allocated ${kb(figures.allocated).toFixed(2)} KB per request`);
  assert.ok(kb(figures.promoted) < 1, `promoted ${kb(figures.promoted).toFixed(2)} KB per request`);
});
