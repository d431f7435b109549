'use strict';
// lib/process/messages.js without processes: the table, the dispatcher and the ask/answer helper
// (test/process/messages.test.js sends a real worker process messages it does not know).

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { MESSAGES, QUESTIONS, PRIMARY, WORKER, createDispatcher, createAsker, answerQuestion } = require('../../lib/process/messages');
const { Supervisor } = require('../../lib/process/primary');

const typesFrom = (side) => Object.keys(MESSAGES).filter((type) => MESSAGES[type].from === side);

function collectingLog() {
  const lines = [];
  return { lines, warn: (line) => lines.push(line), info: () => {}, error: () => {} };
}

test('every message type reaches its handler on the side that receives it, with its handle and sender', () => {
  for (const receiver of [PRIMARY, WORKER]) {
    const sender = receiver === PRIMARY ? WORKER : PRIMARY;
    const seen = [];
    const handlers = Object.fromEntries(typesFrom(sender).map((type) => [type, (message, handle, from) => seen.push([message.type, handle, from])]));
    const log = collectingLog();
    const dispatch = createDispatcher(receiver, handlers, log);
    for (const type of typesFrom(sender)) dispatch({ type }, `handle-${type}`, 'w1');
    assert.deepEqual(seen, typesFrom(sender).map((type) => [type, `handle-${type}`, 'w1']));
    assert.deepEqual(log.lines, []);
  }
});

test('an unknown type, a non-object and a type from the wrong side are logged once each and ignored', () => {
  const log = collectingLog();
  let called = 0;
  const dispatch = createDispatcher(WORKER, { drain: () => called++, ready: () => called++ }, log);
  for (let i = 0; i < 3; i++) {
    dispatch({ type: 'no-such-type' });
    dispatch({ type: 'ready' }); // a worker's own message, never one it receives
    dispatch('text');
    dispatch({ type: '__proto__' });
    dispatch({ type: 'toString' });
  }
  dispatch({ cmd: 'NODE_CLUSTER', act: 'newconn' }); // Node's own cluster messages are not ours
  assert.equal(called, 0);
  assert.equal(log.lines.length, 5, log.lines.join('\n'));
  assert.match(log.lines[0], /worker: ignored a message of unknown type "no-such-type"/);
  assert.match(log.lines[1], /worker: ignored a message of the worker's own type "ready"/);
});

test('a known type without a handler is ignored quietly (metrics messages with metrics off)', () => {
  const log = collectingLog();
  const dispatch = createDispatcher(PRIMARY, {}, log);
  dispatch({ type: 'metrics', report: {} });
  assert.deepEqual(log.lines, []);
});

test('the supervisor handles every type a worker sends; every type sent in lib/process is in the table', () => {
  const supervisor = new Supervisor({});
  assert.deepEqual(Object.keys(supervisor.messageHandlers()).sort(), typesFrom(WORKER).sort());
  const dir = path.join(__dirname, '..', '..', 'lib', 'process');
  const sent = new Set();
  for (const name of fs.readdirSync(dir, { recursive: true }).filter((file) => file.endsWith('.js'))) {
    const text = fs.readFileSync(path.join(dir, name), 'utf8');
    for (const [, type] of text.matchAll(/\{ type: '([a-z-]+)'/g)) sent.add(type);
  }
  assert.ok(sent.size >= 10, 'the scan found the messages');
  for (const type of sent) assert.ok(Object.hasOwn(MESSAGES, type), `${type} is sent but not in the table`);
  for (const entry of Object.values(MESSAGES)) {
    assert.ok([PRIMARY, WORKER].includes(entry.from));
    assert.ok(Array.isArray(entry.fields) && typeof entry.about === 'string' && 'answer' in entry);
  }
});

// A worker and a primary joined back to back: what the worker sends is dispatched by the primary.
function pair(answerers) {
  const worker = { isConnected: () => true, send: (message) => setImmediate(() => workerDispatch(message)) };
  const primaryDispatch = createDispatcher(PRIMARY, { ask: (message, handle, from) => answerQuestion(from, message, answerers) }, collectingLog());
  const asker = createAsker((message) => setImmediate(() => primaryDispatch(message, undefined, worker)));
  const workerDispatch = createDispatcher(WORKER, { answer: (message) => asker.onAnswer(message) }, collectingLog());
  return asker;
}

test('ask: the primary\'s answer resolves it; a refusal, a throw and an unknown question reject with the reason', async () => {
  const asker = pair({ 'metrics-text': async (data) => `text for ${data}`, broken: () => { throw new Error('no totals'); } });
  assert.equal(await asker.ask('metrics-text', 'w1'), 'text for w1');
  await assert.rejects(asker.ask('broken'), /no totals/);
  await assert.rejects(asker.ask('who-knows'), /no answer to "who-knows"/);
  assert.ok(Object.hasOwn(QUESTIONS, 'metrics-text'));
});

test('ask: no answer within the timeout rejects; a late answer is dropped; no primary rejects at once', async () => {
  const sent = [];
  const asker = createAsker((message) => sent.push(message));
  await assert.rejects(asker.ask('metrics-text', null, { timeoutMs: 20 }), /did not answer "metrics-text" within 20 ms/);
  asker.onAnswer({ type: 'answer', id: sent[0].id, ok: true, value: 'late' }); // nothing waits: no throw
  const offline = createAsker(() => assert.fail('nothing is sent without a primary'), { connected: () => false });
  await assert.rejects(offline.ask('metrics-text'), /no primary/);
});
