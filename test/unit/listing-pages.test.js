'use strict';
// lib/pipeline/static/listing-pages.js: a listing's page rendered once and shared, and the worker's
// render slots, with a clock the test moves and renders it finishes by hand.

const test = require('node:test');
const assert = require('node:assert/strict');
const { createPageCache, inSlot, slots, clock, RENDERS_AT_ONCE, RENDERS_WAITING, FRESH_MS } = require('../../lib/pipeline/static/listing-pages');

let now = 1000000;
test.beforeEach((t) => t.mock.method(clock, 'now', () => now));
test.afterEach(() => {
  assert.equal(slots.running, 0, 'every slot given back');
  assert.equal(slots.waiting.length, 0, 'nothing left waiting');
});

// A render the test finishes: render() counts the calls and returns a promise; finish(i) settles the i-th.
function controlledRenders() {
  const pending = [];
  const render = () => new Promise((resolve, reject) => pending.push({ resolve, reject }));
  return { render, pending, finish: (i, body = Buffer.from(`page ${i}`)) => pending[i].resolve(body) };
}

// Lets the slot queue and the promise chains run.
const settle = () => new Promise((resolve) => setImmediate(resolve));

test('requests for one page share one render and its Buffer; another version or key renders anew', async () => {
  const sharedPage = createPageCache();
  const { render, pending, finish } = controlledRenders();
  const first = sharedPage('html /d/', 'v1', render);
  const second = sharedPage('html /d/', 'v1', render);
  assert.equal(first, second);
  await settle();
  assert.equal(pending.length, 1);
  finish(0);
  const [a, b] = await Promise.all([first, second]);
  assert.equal(a, b);
  assert.equal(await sharedPage('html /d/', 'v1', render), a, 'a finished page is shared too');
  const newVersion = sharedPage('html /d/', 'v2', render);
  const otherForm = sharedPage('json /d/', 'v2', render);
  await settle();
  assert.equal(pending.length, 3);
  finish(1);
  finish(2);
  assert.notEqual(await newVersion, a);
  assert.notEqual(await otherForm, await newVersion);
});

test(`a page is shared while its render waits, or began less than ${FRESH_MS} ms before the request`, async () => {
  const sharedPage = createPageCache();
  const { render, pending, finish } = controlledRenders();
  const page = sharedPage('html /d/', 'v1', render);
  await settle();
  now += FRESH_MS - 1;
  assert.equal(sharedPage('html /d/', 'v1', render), page, 'in progress, begun 999 ms ago');
  finish(0);
  await page;
  assert.equal(sharedPage('html /d/', 'v1', render), page, 'done, begun 999 ms ago');
  now += 1;
  const next = sharedPage('html /d/', 'v1', render);
  assert.notEqual(next, page, 'begun 1000 ms ago: rendered anew');
  await settle();
  // a render begun 1000 ms before is not joined, even while it runs
  now += FRESH_MS;
  const after = sharedPage('html /d/', 'v1', render);
  assert.notEqual(after, next);
  await settle();
  assert.equal(pending.length, 3);
  finish(1);
  finish(2);
  await Promise.all([next, after]);
});

test('a render that fails fails every request sharing it, and is not kept', async () => {
  const sharedPage = createPageCache();
  const { render, pending, finish } = controlledRenders();
  const first = sharedPage('html /d/', 'v1', render);
  const second = sharedPage('html /d/', 'v1', render);
  await settle();
  pending[0].reject(Object.assign(new Error('gone'), { code: 'ENOENT' }));
  await assert.rejects(first, /gone/);
  await assert.rejects(second, /gone/);
  assert.equal(sharedPage.kept(), 0);
  const again = sharedPage('html /d/', 'v1', render);
  await settle();
  assert.equal(pending.length, 2);
  finish(1);
  assert.equal((await again).toString(), 'page 1');
});

test(`${RENDERS_AT_ONCE} renders at once, ${RENDERS_WAITING} waiting in order, then null; a page waiting is still shared`, async () => {
  const sharedPage = createPageCache();
  const { render, pending, finish } = controlledRenders();
  const pages = [];
  for (let i = 0; i < RENDERS_AT_ONCE + RENDERS_WAITING; i++) pages.push(sharedPage(`html /d${i}/`, 'v1', render));
  await settle();
  assert.equal(pending.length, RENDERS_AT_ONCE);
  assert.equal(slots.waiting.length, RENDERS_WAITING);
  assert.equal(sharedPage('html /one-more/', 'v1', render), null);
  assert.equal(sharedPage(`html /d${RENDERS_AT_ONCE + 3}/`, 'v1', render), pages[RENDERS_AT_ONCE + 3], 'joins a waiting page');
  // each finished render lets the first waiting one begin
  for (let i = 0; i < pages.length; i++) {
    finish(i);
    assert.equal((await pages[i]).toString(), `page ${i}`);
    await settle();
    assert.equal(pending.length, Math.min(pages.length, i + 1 + RENDERS_AT_ONCE));
    assert.ok(slots.running <= RENDERS_AT_ONCE);
  }
  assert.equal(pending.length, pages.length, 'one render per page');
});

test(`pages are dropped once ${FRESH_MS} ms old`, async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const sharedPage = createPageCache();
  const { render, finish } = controlledRenders();
  const page = sharedPage('html /d/', 'v1', render);
  await settle();
  finish(0);
  await page;
  assert.equal(sharedPage.kept(), 1);
  now += FRESH_MS - 1;
  t.mock.timers.tick(FRESH_MS);
  assert.equal(sharedPage.kept(), 1, 'still fresh');
  now += 1;
  t.mock.timers.tick(FRESH_MS);
  assert.equal(sharedPage.kept(), 0);
});

test('inSlot gives its slot back when the work fails', async () => {
  await assert.rejects(inSlot(() => { throw new Error('fault'); }), /fault/);
  assert.equal(slots.running, 0);
});
