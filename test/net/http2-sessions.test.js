'use strict';
// The HTTP/2 listener's session bookkeeping (net/http2-sessions.js) on stand-in sessions and
// streams, with mocked clocks: the idle GOAWAY counts from the last stream's end, a busy session
// costs no timer per stream, the stream bound and the drain close sessions gracefully.
const test = require('node:test');
const assert = require('node:assert/strict');
const { EventEmitter } = require('node:events');
const { trackSessions } = require('../../lib/net/http2-sessions');

const IDLE_MS = 1000;

function fakeSession() {
  const session = new EventEmitter();
  session.closed = false;
  session.destroyed = false;
  session.closeCalls = 0;
  session.close = () => { session.closeCalls++; session.closed = true; session.emit('close'); };
  return session;
}

// One stream on the session, closed after `holdMs` of mocked time.
function stream(t, session, holdMs = 0) {
  const s = new EventEmitter();
  session.emit('stream', s);
  if (holdMs > 0) t.mock.timers.tick(holdMs);
  s.emit('close');
}

// The mocked clock, and a count of the timers the module under test makes.
function mockClock(t) {
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  const counted = { timers: 0 };
  const mocked = globalThis.setTimeout;
  globalThis.setTimeout = (...args) => { counted.timers++; return mocked(...args); };
  t.after(() => { globalThis.setTimeout = mocked; });
  return counted;
}

// A server tracked with these bounds, and one session opened on it.
function trackedSession(options) {
  const server = new EventEmitter();
  const tracking = trackSessions(server, options);
  const session = fakeSession();
  server.emit('session', session);
  return { server, session, drain: tracking.drain };
}

test('a busy session makes no timer per stream and gets no GOAWAY while streams keep coming', (t) => {
  const counted = mockClock(t);
  const { session } = trackedSession({ idleMs: IDLE_MS, maxStreams: 0 });
  for (let i = 0; i < 1000; i++) stream(t, session, 5); // 5 s of streams, each 5 ms
  assert.equal(session.closeCalls, 0, 'in use for 5 idle periods: no GOAWAY');
  assert.ok(counted.timers >= 1, 'the timers are counted');
  assert.ok(counted.timers <= 6, `at most one timer per idle period, not one per stream (${counted.timers} for 1,000 streams)`);
});

test('the idle GOAWAY comes idleMs after the last stream ended, not before; a long stream is never cut', (t) => {
  mockClock(t);
  const { session } = trackedSession({ idleMs: IDLE_MS, maxStreams: 0 });
  t.mock.timers.tick(600);
  stream(t, session, 3 * IDLE_MS); // open for three idle periods
  assert.equal(session.closeCalls, 0, 'a stream open longer than idleMs keeps the session');
  t.mock.timers.tick(IDLE_MS - 1);
  assert.equal(session.closeCalls, 0, 'not before idleMs after the stream ended');
  t.mock.timers.tick(1);
  assert.equal(session.closeCalls, 1, 'GOAWAY once idle for idleMs');
});

test('an untouched session gets its GOAWAY after idleMs; idleMs 0 never closes it', (t) => {
  mockClock(t);
  const { session: idle } = trackedSession({ idleMs: IDLE_MS, maxStreams: 0 });
  t.mock.timers.tick(IDLE_MS);
  assert.equal(idle.closeCalls, 1);
  const { session: kept } = trackedSession({ idleMs: 0, maxStreams: 0 });
  t.mock.timers.tick(100 * IDLE_MS);
  assert.equal(kept.closeCalls, 0);
});

test('the stream that reaches maxStreams closes the session gracefully; drain closes every session and each new one', (t) => {
  mockClock(t);
  const { server, session: bounded, drain } = trackedSession({ idleMs: 0, maxStreams: 3 });
  stream(t, bounded);
  stream(t, bounded);
  assert.equal(bounded.closeCalls, 0);
  stream(t, bounded);
  assert.equal(bounded.closeCalls, 1, 'GOAWAY at the third stream');
  const open = fakeSession();
  server.emit('session', open);
  drain();
  assert.equal(open.closeCalls, 1, 'drained');
  const late = fakeSession();
  server.emit('session', late);
  assert.equal(late.closeCalls, 1, 'a session arriving during the drain is closed at once');
});
