'use strict';
// The access stages (lib/pipeline/access/): who the client is behind a proxy, the block list,
// and SVR.JS's nonStandardCodes rules (redirects, 401 logins with brute-force protection,
// 403/410/418/451). Fixtures written for these tests in SVR.JS's formats.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const { startPipeline } = require('../../support/pipeline');
const { compileAddressList } = require('../../../lib/http/address-list');
const { createBruteForceGuard, MAX_FAILURES, LOCK_MS } = require('../../../lib/pipeline/access/brute-force');

// A request from a chosen loopback source address (127.0.0.0/8 is all ours).
function get(base, path, { headers = {}, from = '127.0.0.1', method = 'GET' } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method, headers, localAddress: from, agent: false, timeout: 10000 }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString() }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

const basic = (name, password) => ({ authorization: `Basic ${Buffer.from(`${name}:${password}`).toString('base64')}` });

// Accounts as SVR.JS's svrpasswd.js writes them: one of each hash kind.
function account(name, password, kind) {
  const salt = crypto.randomBytes(8).toString('hex');
  if (kind === 'scrypt') return { name, salt, scrypt: true, pass: crypto.scryptSync(password, salt, 64).toString('hex') };
  if (kind === 'pbkdf2') return { name, salt, pbkdf2: true, pass: crypto.pbkdf2Sync(password, salt, 36250, 64, 'sha512').toString('hex') };
  return { name, salt, pass: crypto.createHash('sha256').update(password + salt).digest('hex') };
}

describe('address lists', () => {
  it('match IPv4 and IPv6 addresses and CIDR blocks, IPv4-mapped forms included', () => {
    const list = compileAddressList(['203.0.113.7', '10.0.0.0/8', '2001:db8::/32', '::ffff:192.0.2.0/120', 'localhost'], 'blacklist');
    assert.deepEqual(list.errors, []);
    for (const address of ['203.0.113.7', '::ffff:203.0.113.7', '10.200.1.1', '2001:db8:1::5', '192.0.2.99', '::1', '127.0.0.1']) {
      assert.equal(list.has(address), true, address);
    }
    for (const address of ['203.0.113.8', '11.0.0.1', '2001:db9::1', '192.0.3.1', '', undefined]) {
      assert.equal(list.has(address), false, String(address));
    }
  });

  it('name a bad entry with its index', () => {
    const { errors } = compileAddressList(['10.0.0.0/33', 'example.com'], 'blacklist');
    assert.match(errors[0], /^blacklist\[0\]: .*prefix length must be 0 to 32$/);
    assert.match(errors[1], /^blacklist\[1\]: .*not an IP address$/);
  });
});

describe('blacklist', () => {
  let site;
  before(async () => {
    site = await startPipeline({
      config: { blacklist: ['127.0.0.2', '127.0.1.0/24', '2001:db8::/32'], enableIPSpoofing: true, nonStandardCodes: [{ url: '/old', scode: 301, location: '/new' }] },
      files: { 'index.html': 'home' },
    });
  });
  after(() => site.stop());

  it('answers 403 to a listed address and a listed block, before rules and files', async () => {
    assert.equal((await get(site.url, '/', { from: '127.0.0.2' })).status, 403);
    assert.equal((await get(site.url, '/old', { from: '127.0.1.9' })).status, 403);
    assert.equal((await get(site.url, '/nothing-here', { from: '127.0.1.9' })).status, 403);
  });

  it('serves everyone else', async () => {
    assert.equal((await get(site.url, '/', { from: '127.0.0.3' })).status, 200);
    assert.equal((await get(site.url, '/old', { from: '127.0.0.3' })).status, 301);
  });

  it('checks the resolved address behind a proxy (IPv6 block)', async () => {
    assert.equal((await get(site.url, '/', { headers: { 'x-forwarded-for': '2001:db8::42' } })).status, 403);
    assert.equal((await get(site.url, '/', { headers: { 'x-forwarded-for': '2001:db9::42' } })).status, 200);
  });
});

describe('client address behind a proxy', () => {
  const script = "if (req.url === '/who') { res.writeHead(200); res.end(JSON.stringify({ real: req.socket.realRemoteAddress, port: req.socket.realRemotePort, original: req.socket.originalRemoteAddress })); } else elseCallback();";

  it('enableIPSpoofing: the first X-Forwarded-For entry, from anyone; malformed -> 400', async () => {
    const site = await startPipeline({ config: { enableIPSpoofing: true }, files: { 'serverSideScript.js': script } });
    try {
      const res = await get(site.url, '/who', { headers: { 'x-forwarded-for': '198.51.100.1, 10.0.0.1' } });
      assert.deepEqual(JSON.parse(res.text), { real: '198.51.100.1', port: null, original: '127.0.0.1' });
      assert.equal((await get(site.url, '/who', { headers: { 'x-forwarded-for': 'not-an-address' } })).status, 400);
      const plain = JSON.parse((await get(site.url, '/who')).text);
      assert.equal(plain.real, '127.0.0.1');
    } finally {
      await site.stop();
    }
  });

  it('trustedProxies: believed from a listed proxy only, nearest untrusted entry wins', async () => {
    const site = await startPipeline({
      config: { trustedProxies: ['127.0.0.5', '10.0.0.0/8'], nonStandardCodes: [{ url: '/admin', scode: 403, users: ['198.51.100.0/24'] }] },
      files: { 'serverSideScript.js': script, admin: 'admin page' },
    });
    try {
      const viaProxy = await get(site.url, '/who', { from: '127.0.0.5', headers: { 'x-forwarded-for': '203.0.113.9, 198.51.100.1, 10.1.1.1' } });
      assert.deepEqual(JSON.parse(viaProxy.text), { real: '198.51.100.1', port: null, original: '127.0.0.5' });
      const direct = await get(site.url, '/who', { from: '127.0.0.6', headers: { 'x-forwarded-for': '198.51.100.1' } });
      assert.equal(JSON.parse(direct.text).real, '127.0.0.6', 'a client that is not a listed proxy cannot claim an address');
      assert.equal((await get(site.url, '/who', { from: '127.0.0.6', headers: { 'x-forwarded-for': 'garbage' } })).status, 200);
      assert.equal((await get(site.url, '/who', { from: '127.0.0.5', headers: { 'x-forwarded-for': 'garbage' } })).status, 400);
      // a rule's address list sees the resolved address
      assert.equal((await get(site.url, '/admin', { from: '127.0.0.5', headers: { 'x-forwarded-for': '198.51.100.7' } })).status, 403);
      assert.equal((await get(site.url, '/admin', { from: '127.0.0.5', headers: { 'x-forwarded-for': '192.0.2.7' } })).status, 200);
    } finally {
      await site.stop();
    }
  });
});

describe('nonStandardCodes', () => {
  let site;
  const users = [account('ann', 'sha-pass', 'sha256'), account('bob', 'pbkdf2-pass', 'pbkdf2'), account('cy', 'scrypt-pass', 'scrypt')];
  const nonStandardCodes = [
    { url: '/old', scode: 301, location: '/new' },
    { url: '/moved', scode: 302, location: 'https://example.com/elsewhere' },
    { regex: '/^\\/blog\\/(\\d+)$/', scode: 308, location: '/posts/$1' },
    { regex: '/^\\/tmp\\/(.*)/', scode: 307, location: '/temp/$1' },
    { regex: '/^\\/jump(\\/.*)$/', scode: 302, location: '/$1' },
    { url: '/gone', scode: 410 },
    { url: '/teapot', scode: 418 },
    { url: '/legal', scode: 451 },
    { regex: '/^\\/private(?:\\/|$)/', scode: 401, realm: 'Members "only"' },
    { regex: '/^\\/annonly\\//', scode: 401, userList: ['ann'], disableBruteProtection: true },
    { url: '/private/public.txt', scode: 403 },
    { url: '/hosted', scode: 403, host: '*.example.org' },
    { url: '/teapot2', scode: 200 },
  ];
  before(async () => {
    site = await startPipeline({
      config: { users, nonStandardCodes, rewriteMap: [{ definingRegex: '/^\\/alias$/', replacements: [{ regex: '/.*/', replacement: '/gone' }] }] },
      files: {
        'private/secret.txt': 'secret', 'annonly/a.txt': 'for ann', 'hosted': 'hosted file', 'new': 'new',
        'serverSideScript.js': "if (req.url === '/private/whoami') { res.writeHead(200); res.end(String(authUser)); } else elseCallback();",
      },
    });
  });
  after(() => site.stop());

  it('redirects with 301, 302, 307 and 308; `url` keeps the query, `regex` fills $1', async () => {
    let res = await get(site.url, '/old?x=1');
    assert.equal(res.status, 301);
    assert.equal(res.headers.location, '/new?x=1');
    res = await get(site.url, '/moved');
    assert.equal(res.status, 302);
    assert.equal(res.headers.location, 'https://example.com/elsewhere');
    res = await get(site.url, '/blog/42');
    assert.equal(res.status, 308);
    assert.equal(res.headers.location, '/posts/42');
    res = await get(site.url, '/tmp/a/b?q');
    assert.equal(res.status, 307);
    assert.equal(res.headers.location, '/temp/a/b?q');
    res = await get(site.url, '/jump/evil.example/x');
    assert.equal(res.headers.location, '/evil.example/x', 'a path location never becomes another host');
  });

  it('answers 410, 418 and 451 with the error page; a code that is not an error is 501', async () => {
    assert.equal((await get(site.url, '/gone')).status, 410);
    assert.equal((await get(site.url, '/teapot')).status, 418);
    assert.equal((await get(site.url, '/legal')).status, 451);
    assert.equal((await get(site.url, '/teapot2')).status, 501);
  });

  it('runs after rewriting', async () => {
    assert.equal((await get(site.url, '/alias')).status, 410);
  });

  it('matches `host` with SVR.JS\'s *.domain pattern', async () => {
    assert.equal((await get(site.url, '/hosted', { headers: { host: 'www.example.org' } })).status, 403);
    assert.equal((await get(site.url, '/hosted', { headers: { host: 'example.org' } })).status, 403);
    assert.equal((await get(site.url, '/hosted', { headers: { host: 'example.net' } })).status, 200);
  });

  it('401 asks for Basic credentials with the realm, and admits SHA-256, PBKDF2 and scrypt accounts', async () => {
    const none = await get(site.url, '/private/secret.txt');
    assert.equal(none.status, 401);
    assert.equal(none.headers['www-authenticate'], 'Basic realm="Members \\"only\\"", charset="UTF-8"');
    assert.equal((await get(site.url, '/private/secret.txt', { headers: basic('ann', 'wrong') })).status, 401);
    for (const [name, password] of [['ann', 'sha-pass'], ['bob', 'pbkdf2-pass'], ['cy', 'scrypt-pass']]) {
      const res = await get(site.url, '/private/secret.txt', { headers: basic(name, password), from: '127.0.0.9' });
      assert.equal(res.status, 200, name);
      assert.equal(res.text, 'secret');
    }
  });

  it('a 401 login sets authUser for scripts', async () => {
    const res = await get(site.url, '/private/whoami', { headers: basic('bob', 'pbkdf2-pass'), from: '127.0.0.9' });
    assert.equal(res.text, 'bob');
  });

  it('a non-401 rule wins over a 401 rule for the same path', async () => {
    assert.equal((await get(site.url, '/private/public.txt', { headers: basic('ann', 'sha-pass') })).status, 403);
  });

  it('userList admits only the listed accounts', async () => {
    assert.equal((await get(site.url, '/annonly/a.txt', { headers: basic('ann', 'sha-pass') })).status, 200);
    assert.equal((await get(site.url, '/annonly/a.txt', { headers: basic('bob', 'pbkdf2-pass') })).status, 401);
  });

  it('locks a client out with 429 after 10 failed logins; others are not affected', async () => {
    const attacker = '127.0.0.77';
    for (let i = 0; i < MAX_FAILURES; i++) {
      assert.equal((await get(site.url, '/private/secret.txt', { headers: basic('ann', `guess${i}`), from: attacker })).status, 401);
    }
    assert.equal((await get(site.url, '/private/secret.txt', { headers: basic('ann', 'sha-pass'), from: attacker })).status, 429);
    assert.equal(site.logs.filter((line) => line.includes(`${attacker}: 10 failed logins`)).length, 1, 'one log line per lock, not per request');
    assert.equal((await get(site.url, '/private/secret.txt', { headers: basic('ann', 'sha-pass'), from: '127.0.0.78' })).status, 200);
  });

  it('disableBruteProtection: no lockout', async () => {
    const client = '127.0.0.79';
    for (let i = 0; i < MAX_FAILURES + 2; i++) {
      assert.equal((await get(site.url, '/annonly/a.txt', { headers: basic('ann', `guess${i}`), from: client })).status, 401);
    }
    assert.equal((await get(site.url, '/annonly/a.txt', { headers: basic('ann', 'sha-pass'), from: client })).status, 200);
  });
});

describe('brute-force lock', () => {
  it('is released after 5 minutes, then locks again after 5 more failures; a success resets it', () => {
    let now = 0;
    const guard = createBruteForceGuard({ now: () => now });
    for (let i = 0; i < MAX_FAILURES; i++) guard.failed('a');
    assert.equal(guard.isLocked('a'), true);
    now += LOCK_MS - 1;
    assert.equal(guard.isLocked('a'), true);
    now += 1;
    assert.equal(guard.isLocked('a'), false, 'released');
    for (let i = 0; i < 4; i++) guard.failed('a');
    assert.equal(guard.isLocked('a'), false);
    guard.failed('a');
    assert.equal(guard.isLocked('a'), true, 'locked again after 5 more');
    now += LOCK_MS;
    assert.equal(guard.isLocked('a'), false);
    guard.succeeded('a');
    for (let i = 0; i < MAX_FAILURES - 1; i++) guard.failed('a');
    assert.equal(guard.isLocked('a'), false, 'a success starts the count again');
  });
});

describe('through svr itself', () => {
  const { startServer } = require('../../support/helpers');

  it('the access log shows the resolved client address; a blocked client gets 403 even for a malformed URL', async () => {
    const server = await startServer({ config: { enableIPSpoofing: true, blacklist: ['127.0.0.2'] }, files: { 'index.html': 'home' } });
    try {
      await get(server.url, '/', { headers: { 'x-forwarded-for': '192.0.2.44' } });
      await server.waitForLog(/^192\.0\.2\.44 - - \[/, 'stdout');
      assert.equal((await get(server.url, '/%00', { from: '127.0.0.2' })).status, 403);
      assert.equal((await get(server.url, '/%00', { from: '127.0.0.3' })).status, 400);
    } finally {
      await server.stop();
    }
  });
});

describe('401 rules and the answers of site.authenticate', () => {
  const { createAccessRulesStage } = require('../../../lib/pipeline/access/rules');

  async function run(answer) {
    const sent = [];
    const site = {
      config: { nonStandardCodes: [{ url: '/p', scode: 401 }] },
      authenticate: async () => answer,
      sendError: (req, res, status, options) => sent.push({ status, options }),
      log: { info() {}, warn() {}, error() {} },
    };
    const stage = createAccessRulesStage(site);
    const req = { url: '/p', headers: { host: 'x', authorization: 'Basic eDp5' }, socket: { remoteAddress: '127.0.0.1', localAddress: '127.0.0.1' }, svr: { pathname: '/p' } };
    let passed = false;
    await stage(req, {}, () => { passed = true; });
    return { sent, passed, req };
  }

  it('a name, or { user } from a throttling authenticator, admits', async () => {
    assert.equal((await run('ann')).passed, true);
    const { passed, req } = await run({ user: 'bob', throttled: false, retryAfter: 0 });
    assert.equal(passed, true);
    assert.equal(req.authUser, 'bob');
  });

  it('a throttled answer is a 429 with Retry-After; null is a 401', async () => {
    const throttled = await run({ user: null, throttled: true, retryAfter: 7 });
    assert.deepEqual(throttled.sent.map((s) => [s.status, s.options.headers['Retry-After']]), [[429, '7']]);
    assert.equal((await run(null)).sent[0].status, 401);
    assert.equal((await run({ user: null, throttled: false, retryAfter: 0 })).sent[0].status, 401);
  });
});

describe('401 rules and the maxAuthFailures throttle', () => {
  // The rules keep SVR.JS's own count (429 after MAX_FAILURES); the throttle of site.authenticate,
  // which the scripting stage uses, must neither count their failures nor block their checks.
  let site;
  before(async () => {
    site = await startPipeline({
      config: { users: [account('ann', 'sha-pass', 'sha256')], maxAuthFailures: 3, nonStandardCodes: [{ url: '/p', scode: 401 }] },
      files: {
        'serverSideScript.js': "if (req.url === '/x') { res.writeHead(authUser ? 200 : 401); res.end(String(authUser)); } else elseCallback();",
        p: 'protected',
      },
    });
  });
  after(() => site && site.stop());

  it('failures under a rule are not counted, and a blocked address still logs in there', async () => {
    assert.ok(MAX_FAILURES > 5, 'the rule\'s own lock stays out of the way of 5 failures');
    const wrong = basic('ann', 'nope');
    for (let i = 0; i < 5; i++) {
      const res = await get(site.url, '/p', { headers: wrong });
      assert.equal(res.status, 401, `rule attempt ${i + 1}`);
      assert.equal(res.headers['retry-after'], undefined, `rule attempt ${i + 1}`);
    }
    // 5 failures > maxAuthFailures (3): had they counted, this would be throttled (Retry-After).
    for (let i = 0; i < 3; i++) {
      const res = await get(site.url, '/x', { headers: wrong });
      assert.equal(res.status, 401, `script attempt ${i + 1}`);
      assert.equal(res.headers['retry-after'], undefined, `script attempt ${i + 1} is not throttled: the rule's failures were not counted`);
    }
    // Its own 3 failures block the address for the script's checks: the right password is not even checked...
    const blocked = await get(site.url, '/x', { headers: basic('ann', 'sha-pass') });
    assert.equal(blocked.status, 401);
    assert.ok(Number(blocked.headers['retry-after']) > 0, JSON.stringify(blocked.headers));
    // ...but the rule checks it, and wrong ones stay 401, not 429.
    assert.equal((await get(site.url, '/p', { headers: wrong })).status, 401);
    const admitted = await get(site.url, '/p', { headers: basic('ann', 'sha-pass') });
    assert.equal(admitted.status, 200);
    assert.equal(admitted.text, 'protected');
  });
});
