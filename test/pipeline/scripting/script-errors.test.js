'use strict';
// Errors in server-side JavaScript never take other requests down: a synchronous throw, a
// rejected promise, callServerError(500, err) and an unhandled rejection give that request a
// 500 and the worker keeps serving; an uncaught exception in a callback answers its request with
// a 500, lets the worker's other in-flight requests finish, and the worker is replaced.
// Where the worker process is the point (the same worker answers afterwards, the replacement after
// a crash), the tests share one svr.js started with the same config; each looks only at its own
// requests and log lines, and the crash, which replaces the worker, comes after the others. What a
// page shows runs the pipeline in-process.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { startServer, request, readyWorkerPids, isAlive, waitUntil } = require('../../support/helpers');
const { startPipeline } = require('../../support/pipeline');

const SCRIPT = String.raw`
if (href === '/pid') { responseEnd(String(process.pid)); return; }
if (href === '/throw') throw new Error('thrown synchronously');
if (href === '/server-error') { callServerError(500, new Error('reported with callServerError')); return; }
if (href === '/unhandled') { disableEndElseCallbackExecute = true; Promise.reject(new Error('nobody handles this')); return; }
if (href === '/crash') {
  disableEndElseCallbackExecute = true;
  setTimeout(function () { customvar1 = 'crashed'; throw new Error('thrown in a timer'); }, 1);
  return;
}
if (href === '/slow') {
  // Starts its answer, then finishes only once /crash has thrown in this same worker.
  disableEndElseCallbackExecute = true;
  res.writeHead(200, { 'Content-Type': 'text/plain' });
  res.write('slow started;');
  const timer = setInterval(function () {
    if (customvar1 !== 'crashed') return;
    clearInterval(timer);
    setTimeout(function () { res.end('slow finished after the crash'); }, 50);
  }, 5);
  return;
}
`;

const MOD = `
module.exports = async function (req, res, logFacilities, config, next) {
  if (req.parsedURL.pathname === '/mod-reject') throw new Error('rejected by an async mod');
  next();
};
module.exports.modInfo = { name: 'rejecter', version: '1.0' };
`;

function siteOptions(config = {}) {
  return { config: { workers: 1, modsDirectory: 'mods', ...config }, files: { 'serverSideScript.js': SCRIPT, '../mods/a.js': MOD } };
}

// A site of its own, in-process, for what a page shows.
async function withPipeline(config, fn) {
  const server = await startPipeline(siteOptions(config));
  try {
    return await fn(server);
  } finally {
    await server.stop();
  }
}

// The svr.js the worker tests share (siteOptions()).
let shared;
test.before(async () => { shared = await startServer(siteOptions()); });
test.after(() => shared.stop());

async function pid(server) {
  const res = await request(`${server.url}/pid`, { agent: false });
  assert.equal(res.status, 200);
  return Number(res.text);
}

for (const [path, what] of [
  ['/throw', 'a synchronous throw in the script'],
  ['/server-error', 'callServerError(500, error)'],
  ['/unhandled', 'an unhandled promise rejection in the script'],
  ['/mod-reject', 'a rejected promise of an async mod'],
]) {
  test(`${what}: 500 for that request, the worker keeps serving`, async () => {
    const server = shared;
    const since = server.stderr().length;
    const before = await pid(server);
    const res = await request(`${server.url}${path}`);
    assert.equal(res.status, 500);
    assert.equal(await pid(server), before, 'the same worker answers afterwards');
    assert.ok(!server.stderr().slice(since).some((line) => /died|recycling/.test(line)));
  });
}

test('the 500 page shows the stack with the script file and line only when stackHidden is false', async () => {
  await withPipeline({ stackHidden: false }, async (server) => {
    const res = await request(`${server.url}/throw`);
    assert.match(res.text, /thrown synchronously/);
    assert.match(res.text, /serverSideScript\.js:3:/);
  });
  await withPipeline({}, async (server) => {
    const res = await request(`${server.url}/throw`);
    assert.equal(res.status, 500);
    assert.ok(!res.text.includes('serverSideScript.js'), 'stackHidden defaults to true');
  });
});

test('an uncaught exception in a callback: 500 for its request, a concurrent slow request completes, the worker is replaced', async () => {
  const server = shared;
  const before = await pid(server);
  const since = server.stderr().length;
  // The slow request is in flight (its head has arrived) before the crash is triggered.
  const slow = await new Promise((resolve, reject) => {
    http.get(`${server.url}/slow`, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => { body += chunk; });
      resolve({ status: res.statusCode, done: new Promise((ok, fail) => { res.on('end', () => ok(body)); res.on('error', fail); res.on('aborted', () => fail(new Error('aborted'))); }) });
    }).on('error', reject);
  });
  assert.equal(slow.status, 200);
  const crash = await request(`${server.url}/crash`, { agent: false });
  assert.equal(crash.status, 500);
  assert.equal(await slow.done, 'slow started;slow finished after the crash');
  await server.waitForLog(new RegExp(`worker ${before} is recycling after an uncaught exception \\(thrown in a timer\\)`), 'stderr', since);
  await server.waitForLog(/worker \d+ ready/, 'stderr', since);
  await server.waitForLog(/uncaught exception while serving GET \/crash: thrown in a timer/, 'stderr', since);
  // The old worker stops accepting once its replacement listens (the primary tells it after the
  // "ready" line): a new connection may still reach it for a moment.
  let after = await pid(server);
  for (const until = Date.now() + 5000; after === before && Date.now() < until;) after = await pid(server);
  assert.notEqual(after, before, 'a new worker serves');
  // The old worker exits by itself once its requests are done.
  assert.equal(await waitUntil(() => !isAlive(before), 10000), true, 'the old worker exited');
  assert.ok(!server.stderr().some((line) => line.includes(`worker ${before} died`)), 'its exit is not taken for a second crash');
  assert.equal(readyWorkerPids(server).filter(isAlive).length, 1);
});

test('--single-threaded: an uncaught exception answers 500, then the server stops with exit code 1', async () => {
  const server = await startServer({ files: { 'serverSideScript.js': SCRIPT }, args: ['--single-threaded'] });
  try {
    const crash = await request(`${server.url}/crash`, { agent: false });
    assert.equal(crash.status, 500);
    const { code } = await server.exited;
    assert.equal(code, 1);
    assert.ok(server.stderr().some((line) => /uncaught exception while serving GET \/crash/.test(line)));
  } finally {
    await server.stop();
  }
});
