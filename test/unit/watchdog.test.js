'use strict';
// lib/process/watchdog.js's worker side without processes: what a worker sends as requests
// enter user code.
const test = require('node:test');
const assert = require('node:assert/strict');
const { startHeartbeat, EARLY_BEAT_DELAY_MS, EARLY_BEAT_GAP_MS } = require('../../lib/process/watchdog');

const request = (url) => ({ req: { method: 'GET', url }, res: { writableEnded: false, destroyed: false } });

test('only the first request into user code after a heartbeat sends a note', () => {
  const sent = [];
  const { noteUserCode: note } = startHeartbeat({ stallTimeoutMs: 4000, send: (message) => sent.push(message), served: () => 0 });
  assert.equal(sent.length, 1); // the first timed beat, at start
  assert.equal(sent[0].note, false);
  for (let i = 0; i < 1000; i++) note(request(`/r${i}`));
  assert.equal(sent.length, 2);
  assert.equal(sent[1].note, true);
  assert.equal(sent[1].running.url, '/r0');
});

test('with the watchdog off, entering user code sends nothing', () => {
  const sent = [];
  const { noteUserCode: note } = startHeartbeat({ stallTimeoutMs: 0, send: (message) => sent.push(message), served: () => 0 });
  for (let i = 0; i < 10; i++) note(request(`/r${i}`));
  assert.equal(sent.length, 1);
});

// The balancing's early beat: a worker whose connections change sends its busy count within
// EARLY_BEAT_DELAY_MS, not at the next timed beat (a second with the watchdog off). The test
// waits on the worker's count being read, which is when the early beat decides. The heartbeat's
// timers do not keep a process alive (a worker's server does), so the test holds one of its own.
function keepingAlive(t) {
  const timer = setInterval(() => {}, 60000);
  t.after(() => clearInterval(timer));
}

function heartbeatWithCount(initialBusy) {
  const sent = [];
  let busy = initialBusy;
  let counted = null;
  const heartbeat = startHeartbeat({
    stallTimeoutMs: 0, // timed beats every second: far later than any early one
    send: (message) => sent.push({ ...message, at: Date.now() }),
    served: () => 0,
    busyConnections: () => { counted?.(); return busy; },
  });
  const nextCount = () => new Promise((resolve) => { counted = resolve; });
  return { sent, heartbeat, setBusy: (n) => { busy = n; }, nextCount };
}

test('connections that change send the busy count at once, one beat per burst', async (t) => {
  keepingAlive(t);
  const { sent, heartbeat, setBusy, nextCount } = heartbeatWithCount(0);
  assert.equal(sent.length, 1); // the first timed beat, at start
  const changedAt = Date.now();
  setBusy(5);
  const counted = nextCount();
  for (let i = 0; i < 5; i++) heartbeat.connectionsChanged(); // a burst of five accepts
  await counted;
  assert.equal(sent.length, 2);
  assert.equal(sent[1].busy, 5);
  assert.equal(sent[1].note, false);
  assert.ok(sent[1].at - changedAt >= EARLY_BEAT_DELAY_MS - 1, 'the beat waits for the rest of the burst');
  assert.ok(sent[1].at - changedAt < 500, `the early beat took ${sent[1].at - changedAt} ms; the timed one comes after 1000`);
});

test('an unchanged count sends nothing early, and early beats keep their gap', async (t) => {
  keepingAlive(t);
  const { sent, heartbeat, setBusy, nextCount } = heartbeatWithCount(3);
  let counted = nextCount();
  heartbeat.connectionsChanged(); // one connection closed, another opened: still 3
  await counted;
  assert.equal(sent.length, 1, 'the same count as the last beat is not sent again');
  setBusy(1);
  counted = nextCount();
  heartbeat.connectionsChanged();
  await counted;
  assert.equal(sent.length, 2);
  setBusy(4);
  counted = nextCount();
  heartbeat.connectionsChanged();
  await counted;
  assert.equal(sent.length, 3);
  assert.equal(sent[2].busy, 4);
  assert.ok(sent[2].at - sent[1].at >= EARLY_BEAT_GAP_MS - 1, `early beats ${sent[2].at - sent[1].at} ms apart`);
});
