'use strict';
// Workers die with their primary, even while their event loop spins in user code: a worker stuck
// in a loop never sees its IPC channel close, so the primary's reaper (a shell holding a pipe the
// primary's death closes) kills it instead.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { startServer, readyWorkerPids, waitUntil, request } = require('../support/helpers');

// A mod that marks which worker spins (a file named after its pid), then spins for ever.
const SPIN_MOD = String.raw`
module.exports = function (req, res, logFacilities, config, next) {
  if (req.parsedURL.pathname !== '/spin') return next();
  require('fs').writeFileSync('spinning-' + process.pid, '');
  for (;;) {}
};
module.exports.modInfo = { name: 'spin', version: '1.0.0' };
`;

// Gone: no such process, or a zombie nobody reaps (its parent is the one we killed).
function isGone(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] === 'Z';
  } catch {
    return true;
  }
}

// Free within `deadline` (a time from Date.now()): looked at every 50 ms until then.
async function portFreeBy(port, deadline) {
  for (;;) {
    if (await portIsFree(port)) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function portIsFree(port) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, ipv6Only: false }, () => server.close(() => resolve(true)));
  });
}

test('kill -9 of the primary while both workers spin in user code: both are gone within 5 s and the port is free', async (t) => {
  const server = await startServer({
    // workerStallTimeout 0: the primary's own watchdog must not be what ends them
    config: { workers: 2, workerStallTimeout: 0, modsDirectory: 'mods' },
    files: { 'index.html': 'home', '../mods/spin.js': SPIN_MOD },
  });
  await waitUntil(() => readyWorkerPids(server).length === 2);
  const workers = readyWorkerPids(server);
  assert.equal(workers.length, 2);
  t.after(async () => {
    for (const pid of workers) if (!isGone(pid)) process.kill(pid, 'SIGKILL');
    await server.stop();
  });
  const spinning = () => workers.filter((pid) => fs.existsSync(path.join(server.root, `spinning-${pid}`)));
  // Each /spin takes the worker that accepts it; the other worker accepts the next one.
  const pending = [];
  for (let i = 0; i < 20 && spinning().length < 2; i++) {
    pending.push(request(`${server.url}/spin`, { timeout: 60000 }).catch(() => {}));
    await waitUntil(() => spinning().length > Math.min(i, 1), 1000);
  }
  assert.deepEqual(spinning().sort(), [...workers].sort(), 'both workers spin');

  process.kill(server.pid, 'SIGKILL');
  await server.exited;
  const killedAt = Date.now();
  const allGone = await waitUntil(() => workers.every(isGone), 5000);
  assert.ok(allGone, `still running ${Date.now() - killedAt} ms after the primary was killed: ${workers.filter((pid) => !isGone(pid)).join(', ')}`);
  assert.equal(await portFreeBy(server.port, killedAt + 5000), true, 'the port is free');
  for (const pid of workers) await server.waitForLog(new RegExp(`warn worker ${pid}: the primary \\(pid ${server.pid}\\) is gone and this worker did not exit within \\d+ ms: killed`));
});

test('kill -9 of the primary while the workers are idle: they drain and exit by themselves, the port is free', async (t) => {
  const server = await startServer({ config: { workers: 2 }, files: { 'index.html': 'home' } });
  await waitUntil(() => readyWorkerPids(server).length === 2);
  const workers = readyWorkerPids(server);
  t.after(async () => {
    for (const pid of workers) if (!isGone(pid)) process.kill(pid, 'SIGKILL');
    await server.stop();
  });
  assert.equal((await request(`${server.url}/`, { headers: { connection: 'close' }, agent: false })).text, 'home');
  process.kill(server.pid, 'SIGKILL');
  await server.exited;
  const killedAt = Date.now();
  assert.ok(await waitUntil(() => workers.every(isGone), 5000), 'the workers exited');
  assert.equal(await portFreeBy(server.port, killedAt + 5000), true, 'the port is free');
  assert.equal(server.stderr().filter((line) => /did not exit within/.test(line)).length, 0, 'none had to be killed');
});
