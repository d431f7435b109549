'use strict';
// lib/process/watchdog.js's worker side without processes: what a worker sends as requests
// enter user code.
const test = require('node:test');
const assert = require('node:assert/strict');
const { startHeartbeat } = require('../../lib/process/watchdog');

const request = (url) => ({ req: { method: 'GET', url }, res: { writableEnded: false, destroyed: false } });

test('only the first request into user code after a heartbeat sends a note', () => {
  const sent = [];
  const note = startHeartbeat({ stallTimeoutMs: 4000, send: (message) => sent.push(message), served: () => 0 });
  assert.equal(sent.length, 1); // the first timed beat, at start
  assert.equal(sent[0].note, false);
  for (let i = 0; i < 1000; i++) note(request(`/r${i}`));
  assert.equal(sent.length, 2);
  assert.equal(sent[1].note, true);
  assert.equal(sent[1].running.url, '/r0');
});

test('with the watchdog off, entering user code sends nothing', () => {
  const sent = [];
  const note = startHeartbeat({ stallTimeoutMs: 0, send: (message) => sent.push(message), served: () => 0 });
  for (let i = 0; i < 10; i++) note(request(`/r${i}`));
  assert.equal(sent.length, 1);
});
