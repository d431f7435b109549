'use strict';
// The rate-limit arithmetic (GCRA) and the host's in-memory counters: burst then rate, the
// Retry-After a refusal carries, and a bound on memory under a flood of distinct keys.

const test = require('node:test');
const assert = require('node:assert/strict');
const { decide, bucketOf } = require('../../lib/process/rate-limits/gcra');
const { LocalStore } = require('../../lib/process/rate-limits/local-store');
const { shownUrl } = require('../../lib/process/rate-limits/redis-store');

test('a bucket of `burst` lets that many through at once, then one per interval', () => {
  let now = 1000000;
  const store = new LocalStore({ maxKeys: 100, now: () => now });
  const { intervalMs, toleranceMs } = bucketOf(10, 3); // 100 ms a token, 3 tokens
  const allowed = () => store.take('k', intervalMs, toleranceMs).allowed;
  assert.deepEqual([allowed(), allowed(), allowed(), allowed()], [true, true, true, false]);
  const refused = store.take('k', intervalMs, toleranceMs);
  assert.equal(refused.retryMs, 100, 'the next token comes back 100 ms later');
  now += 99;
  assert.equal(allowed(), false, 'one ms before the token is back');
  now += 1;
  assert.equal(allowed(), true);
  assert.equal(allowed(), false);
  // Over a long run the rate is exact: 1000 requests, one every ms for 10 s -> 3 + 10 x 10 pass.
  let passed = 0;
  for (let i = 0; i < 10000; i++) { now += 1; if (store.take('long', intervalMs, toleranceMs).allowed) passed++; }
  assert.equal(passed, 3 + 100 - 1, 'the burst, then one each 100 ms of the 10 s (the first of them taken by the burst)');
});

test('a refused request changes nothing; a delayed one is told how far ahead its turn is', () => {
  const { intervalMs, toleranceMs } = bucketOf(2, 2); // 500 ms a token, 2 tokens
  let answer = decide(0, 10000, intervalMs, toleranceMs);
  assert.deepEqual(answer, { allowed: true, aheadMs: 0, tat: 10500 });
  answer = decide(answer.tat, 10000, intervalMs, toleranceMs);
  assert.deepEqual(answer, { allowed: true, aheadMs: 500, tat: 11000 });
  assert.deepEqual(decide(answer.tat, 10000, intervalMs, toleranceMs), { allowed: false, retryMs: 500 });
  assert.deepEqual(decide(answer.tat, 11000, intervalMs, toleranceMs), { allowed: true, aheadMs: 0, tat: 11500 }, 'after a second the bucket is full again');
});

test('a million distinct keys keep at most maxKeys counters; the ones in use survive', () => {
  const store = new LocalStore({ maxKeys: 1000, now: () => 1000000 }); // a still clock: the busy key never refills
  const { intervalMs, toleranceMs } = bucketOf(1, 1);
  assert.equal(store.take('busy', intervalMs, toleranceMs).allowed, true);
  for (let i = 0; i < 1000000; i++) {
    assert.equal(store.take(`spoofed ${i}`, intervalMs, toleranceMs).allowed, true);
    if (i % 500 === 0) assert.equal(store.take('busy', intervalMs, toleranceMs).allowed, false, 'the busy key is still counted');
  }
  assert.equal(store.size, 1000);
});

test('leases: a full bucket lends a share of its tokens, a nearly empty one none, and the rate holds', () => {
  let now = 5000000;
  const store = new LocalStore({ maxKeys: 100, now: () => now });
  const { intervalMs, toleranceMs } = bucketOf(100, 100); // 10 ms a token, 100 tokens
  const first = store.take('k', intervalMs, toleranceMs, 6);
  assert.equal(first.lease, 16, '99 tokens left after this one, a sixth of them lent');
  const small = bucketOf(20, 5);
  assert.equal(store.take('small', small.intervalMs, small.toleranceMs, 6).lease, undefined, '4 tokens left: nothing to lend');

  // Three workers, each sending a request every ms for 10 s and spending its leases first (as
  // ipc.js does, up to a second): no more pass than the bucket allows, and not much less.
  const workers = [0, 1, 2].map(() => ({ tokens: 0, until: 0 }));
  let passed = 0;
  for (let ms = 0; ms < 10000; ms++, now++) {
    for (const worker of workers) {
      if (worker.tokens > 0 && now < worker.until) { worker.tokens--; passed++; continue; }
      const answer = store.take('flood', intervalMs, toleranceMs, 8);
      if (!answer.allowed) continue;
      passed++;
      if (answer.lease) Object.assign(worker, { tokens: answer.lease, until: now + 1000 });
    }
  }
  const most = 100 + 100 * 10;
  assert.ok(passed <= most && passed >= most * 0.9, `${passed} passed, at most ${most}`);
});

test('a Redis password never reaches the log', () => {
  assert.equal(shownUrl('redis://:s3cret@10.0.0.5:6379/0'), 'redis://:***@10.0.0.5:6379/0');
  assert.equal(shownUrl('rediss://svr:s3cret@redis.example:6380'), 'rediss://svr:***@redis.example:6380');
  assert.equal(shownUrl('redis://10.0.0.5:6379'), 'redis://10.0.0.5:6379');
});
