'use strict';
// Credentials cost little and brute force is throttled.
//   - site.authenticate(req) -> { user, throttled, retryAfter } (the API access rules build on);
//   - a successful check is remembered (keyed by a digest of the header): no second hash;
//   - after maxAuthFailures failed attempts from one address within authFailureWindow, that
//     address's attempts are not hashed any more: throttled, with a Retry-After, and logged;
//     other addresses are not affected; the throttle can be turned off (maxAuthFailures 0);
//   - each worker counts on its own: with 2 workers an address makes 2 x maxAuthFailures attempts.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const { createAuthenticator } = require('../../../lib/pipeline/credentials');
const { startServer, request, readyWorkerPids } = require('../../support/helpers');

const salt = 'salt1';
const USERS = [{ name: 'alice', salt, pass: crypto.createHash('sha256').update(`secret${salt}`).digest('hex') }];
const PBKDF2_USERS = [{
  name: 'bob', salt, pbkdf2: true,
  pass: crypto.pbkdf2Sync('hunter2', salt, 36250, 64, 'sha512').toString('hex'),
}];
const header = (name, password) => `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}`;
const fakeReq = (authorization, address = '192.0.2.1') => ({ headers: { authorization }, socket: { remoteAddress: address } });

describe('site.authenticate (unit)', () => {
  it('answers { user, throttled, retryAfter } and remembers a success without hashing again', async () => {
    const warnings = [];
    const authenticate = createAuthenticator(USERS, { log: { warn: (m) => warnings.push(m) } });
    const ok = await authenticate(fakeReq(header('alice', 'secret')));
    assert.deepEqual(ok, { user: 'alice', throttled: false, retryAfter: 0 });
    const hashes = authenticate.stats.hashes;
    assert.deepEqual(await authenticate(fakeReq(header('alice', 'secret'))), ok);
    assert.equal(authenticate.stats.hashes, hashes, 'the second check was answered from memory');
    assert.deepEqual(await authenticate(fakeReq(header('alice', 'wrong'))), { user: null, throttled: false, retryAfter: 0 });
  });

  it('throttles an address after maxAuthFailures failures, without hashing, and logs it', async () => {
    const warnings = [];
    const authenticate = createAuthenticator(USERS, { maxAuthFailures: 3, authFailureWindow: 60000, log: { warn: (m) => warnings.push(m) } });
    for (let i = 0; i < 3; i++) {
      assert.equal((await authenticate(fakeReq(header('alice', `wrong${i}`)))).throttled, false);
    }
    const hashes = authenticate.stats.hashes;
    const blocked = await authenticate(fakeReq(header('alice', 'secret')));
    assert.equal(blocked.user, null);
    assert.equal(blocked.throttled, true);
    assert.ok(blocked.retryAfter > 0 && blocked.retryAfter <= 60, `retryAfter ${blocked.retryAfter}`);
    assert.equal(authenticate.stats.hashes, hashes, 'a throttled attempt costs no hash');
    assert.equal(warnings.filter((w) => /192\.0\.2\.1/.test(w) && /failed/.test(w)).length, 1, warnings.join('\n'));
    // another address is not affected
    assert.deepEqual(await authenticate(fakeReq(header('alice', 'secret'), '192.0.2.2')), { user: 'alice', throttled: false, retryAfter: 0 });
  });

  it('a remembered success still passes from a throttled address; maxAuthFailures 0 turns it off', async () => {
    const authenticate = createAuthenticator(USERS, { maxAuthFailures: 1, authFailureWindow: 60000 });
    assert.equal((await authenticate(fakeReq(header('alice', 'secret')))).user, 'alice');
    await authenticate(fakeReq(header('alice', 'wrong')));
    assert.equal((await authenticate(fakeReq(header('alice', 'x')))).throttled, true);
    assert.equal((await authenticate(fakeReq(header('alice', 'secret')))).user, 'alice');
    const open = createAuthenticator(USERS, { maxAuthFailures: 0 });
    for (let i = 0; i < 20; i++) assert.equal((await open(fakeReq(header('alice', 'wrong')))).throttled, false);
  });
});

describe('password hashing (unit)', () => {
  it('runs at most 2 slow hashes at once', async () => {
    const authenticate = createAuthenticator(PBKDF2_USERS, { maxAuthFailures: 0 });
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => authenticate(fakeReq(header('bob', `wrong${i}`)))));
    assert.ok(results.every((r) => r.user === null && !r.throttled));
    assert.equal(authenticate.stats.hashes, 6);
    assert.equal(authenticate.stats.peakConcurrentHashes, 2);
  });
});

describe('the throttle over HTTP', () => {
  let srv;
  before(async () => {
    srv = await startServer({
      config: { users: PBKDF2_USERS, maxAuthFailures: 5 },
      files: {
        'serverSideScript.js': "disableEndElseCallbackExecute = true;\nif (!authUser) { res.writeHead(401, { 'WWW-Authenticate': 'Basic' }); res.end('who?'); } else res.end('hi ' + authUser);\n",
      },
    });
  });
  after(() => srv.stop());

  it('gives 401 with Retry-After after 5 wrong passwords, logs it, and lets the right one in later elsewhere', async () => {
    const wrong = { authorization: header('bob', 'nope') };
    for (let i = 0; i < 5; i++) {
      const res = await request(`${srv.url}/x`, { headers: wrong });
      assert.equal(res.status, 401);
      assert.equal(res.headers['retry-after'], undefined, `attempt ${i + 1} is not throttled yet`);
    }
    const throttled = await request(`${srv.url}/x`, { headers: { authorization: header('bob', 'hunter2') } });
    assert.equal(throttled.status, 401);
    assert.ok(Number(throttled.headers['retry-after']) > 0, JSON.stringify(throttled.headers));
    await srv.waitForLog(/authentication: (::ffff:)?127\.0\.0\.1 blocked .*failed attempts/);
    // another client address (127.0.0.2) is not throttled
    const other = await new Promise((resolve, reject) => {
      http.get(`${srv.url}/x`, { localAddress: '127.0.0.2', headers: { authorization: header('bob', 'hunter2') } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => { text += c; });
        res.on('end', () => resolve(text));
      }).on('error', reject);
    });
    assert.equal(other, 'hi bob');
  });
});

describe('the throttle with two workers', () => {
  it('counts in each worker on its own: 2 x maxAuthFailures failures before both block', async (t) => {
    const MAX = 3;
    // "rr": the primary hands connections to the workers in turn, so both get attempts; which
    // worker answered is read from the answer, so the count per worker needs no particular order.
    const srv = await startServer({
      config: { workers: 2, schedulingPolicy: 'rr', users: USERS, maxAuthFailures: MAX },
      files: { 'serverSideScript.js': "disableEndElseCallbackExecute = true;\nres.writeHead(authUser ? 200 : 401); res.end(String(process.pid));\n" },
      env: { NODE_CLUSTER_SCHED_POLICY: '' }, // the config decides, not the environment
    });
    t.after(() => srv.stop());
    const workers = readyWorkerPids(srv).map(String).sort();
    assert.equal(workers.length, 2);
    const failures = new Map(); // worker pid -> failed attempts it answered unthrottled
    const blocked = new Set(); // workers that answered throttled
    for (let i = 0; i < 40 && blocked.size < 2; i++) {
      const res = await request(`${srv.url}/x`, { agent: false, headers: { authorization: header('alice', 'wrong') } });
      const pid = res.text;
      assert.ok(workers.includes(pid), pid);
      assert.equal(res.status, 401);
      const count = failures.get(pid) || 0;
      if (count < MAX) {
        assert.equal(res.headers['retry-after'], undefined, `worker ${pid}, its attempt ${count + 1}: ${JSON.stringify([...failures])}`);
        failures.set(pid, count + 1);
      } else {
        assert.ok(Number(res.headers['retry-after']) > 0, `worker ${pid} after its ${MAX} failures`);
        blocked.add(pid);
      }
    }
    assert.deepEqual([...blocked].sort(), workers, 'both workers blocked the address');
    assert.equal([...failures.values()].reduce((a, b) => a + b, 0), 2 * MAX);
  });
});

describe('site.authenticate with { throttle: false } (unit)', () => {
  it('neither blocks nor counts: for callers with their own count (the nonStandardCodes rules)', async () => {
    const authenticate = createAuthenticator(USERS, { maxAuthFailures: 2 });
    for (let i = 0; i < 5; i++) await authenticate(fakeReq(header('alice', 'wrong')), { throttle: false });
    assert.equal((await authenticate(fakeReq(header('alice', 'x')))).throttled, false, 'nothing was counted');
    await authenticate(fakeReq(header('alice', 'y')));
    assert.equal((await authenticate(fakeReq(header('alice', 'z')))).throttled, true);
    assert.equal((await authenticate(fakeReq(header('alice', 'secret')), { throttle: false })).user, 'alice');
  });
});
