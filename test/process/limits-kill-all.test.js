'use strict';
// `kill -9` of every worker closed the listening socket (Node's cluster
// closes a shared socket once no worker holds it): 272 ms of ECONNREFUSED. The primary now keeps
// a descriptor of each TCP listening socket (lib/process/held-sockets.js), so connections wait in
// the kernel's backlog until a replacement accepts them. It lets go of them on a stop (new clients
// are refused, not left waiting) and, after a reload, of the ports no longer configured.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const https = require('node:https');
const net = require('node:net');
const { startServer, getFreePort, readyWorkerPids, isAlive, waitUntil } = require('../support/helpers');

const ROUNDS = 3;
const PROBES = 3;
const ANSWERS_PER_ROUND = 20;
// Each probe lane waits this long after an answer: with 3 lanes per target a new connection is
// tried every ~1-2 ms, far finer than the refusal windows this test is about (0.5-1 s without the
// held sockets), without keeping both cores busy for the whole test.
const PROBE_PAUSE_MS = 3;

// One request on a fresh connection (no keep-alive: each probe is a new connect) to `target`, a
// port on 127.0.0.1 or { host, port, tls }. Resolves { outcome: 'answered' | 'refused' | 'reset' |
// 'hung' | 'status N', ms }.
function probeOnce(target, { hangMs = 10000 } = {}) {
  const { host = '127.0.0.1', port, tls = false } = typeof target === 'object' ? target : { port: target };
  const started = Date.now();
  return new Promise((resolve) => {
    const done = (outcome) => { req.destroy(); resolve({ outcome, ms: Date.now() - started }); };
    const options = { host, port, path: '/ok.txt', agent: false, rejectUnauthorized: false };
    const req = (tls ? https : http).get(options, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode === 200 ? 'answered' : `status ${res.statusCode}`));
      res.on('error', () => done('reset'));
    });
    req.setTimeout(hangMs, () => done('hung'));
    req.on('error', (error) => done(error.code === 'ECONNREFUSED' ? 'refused' : 'reset'));
  });
}

// Probes in loops (PROBES per target) until stopped; counts the outcomes and remembers when
// refusals happened.
function probeContinuously(targets) {
  const stats = { answered: 0, refused: 0, reset: 0, other: [], slowestMs: 0, refusedAt: [], answeredPerTarget: targets.map(() => 0) };
  let running = true;
  const loop = async (target, index) => {
    while (running) {
      const { outcome, ms } = await probeOnce(target);
      if (outcome === 'answered') {
        stats.answered++;
        stats.answeredPerTarget[index]++;
        stats.slowestMs = Math.max(stats.slowestMs, ms);
      } else if (outcome === 'refused') {
        stats.refused++;
        stats.refusedAt.push(Date.now());
      } else if (outcome === 'reset') {
        stats.reset++; // a request in flight on a killed worker: nothing can save it
      } else {
        stats.other.push(outcome);
      }
      await new Promise((resolve) => setTimeout(resolve, PROBE_PAUSE_MS));
    }
  };
  const loops = targets.flatMap((target, index) => Array.from({ length: PROBES }, () => loop(target, index)));
  return {
    stats,
    stop: async () => { running = false; await Promise.all(loops); return stats; },
  };
}

// Until every target has answered `count` more probes.
async function waitForAnswers(probes, count) {
  const wanted = probes.stats.answeredPerTarget.map((answered) => answered + count);
  const answered = () => probes.stats.answeredPerTarget.every((n, i) => n >= wanted[i]);
  if (!await waitUntil(answered, 30000)) throw new Error(`probes answered ${probes.stats.answeredPerTarget}, wanted ${wanted}`);
}

// Until two workers started after line `since` of the server's stderr are ready.
async function waitForTwoReady(server, since) {
  await server.waitForLog(/worker \d+ ready/, 'stderr', since);
  const first = server.stderr().findIndex((line, i) => i >= since && /worker \d+ ready/.test(line));
  await server.waitForLog(/worker \d+ ready/, 'stderr', first + 1);
}

// kill -9 of both workers, `rounds` times, while probes run on every target. Returns the probes'
// stats and, per round, how long until both replacements were ready and what was refused.
async function killAllWorkers(server, targets, rounds) {
  const probes = probeContinuously(targets);
  const perRound = [];
  try {
    await waitForAnswers(probes, ANSWERS_PER_ROUND);
    for (let round = 0; round < rounds; round++) {
      const victims = readyWorkerPids(server).filter(isAlive);
      assert.equal(victims.length, 2, `two live workers before round ${round + 1}`);
      const since = server.stderr().length;
      const refusedBefore = probes.stats.refused;
      const resetBefore = probes.stats.reset;
      const killedAt = Date.now();
      for (const pid of victims) process.kill(pid, 'SIGKILL');
      // Both replacements ready, then answers again.
      await waitForTwoReady(server, since);
      const readyMs = Date.now() - killedAt;
      await waitForAnswers(probes, ANSWERS_PER_ROUND);
      const refusedTimes = probes.stats.refusedAt.filter((at) => at >= killedAt);
      perRound.push({
        readyMs,
        refused: probes.stats.refused - refusedBefore,
        refusedWindowMs: refusedTimes.length ? refusedTimes[refusedTimes.length - 1] - killedAt : 0,
        reset: probes.stats.reset - resetBefore,
      });
    }
  } finally {
    await probes.stop();
  }
  return { stats: probes.stats, perRound };
}

function assertNothingRefused(t, { stats, perRound }, minAnswered) {
  t.diagnostic(`rounds: ${JSON.stringify(perRound)}; answered ${stats.answered}, refused ${stats.refused}, reset ${stats.reset}, slowest answer ${stats.slowestMs} ms`);
  assert.equal(stats.refused, 0, `no connection refused (refused per round: ${perRound.map((r) => `${r.refused} over ${r.refusedWindowMs} ms`).join(', ')})`);
  assert.deepEqual(stats.other, [], 'no probe left hanging or answered with an error');
  assert.ok(stats.answered >= minAnswered, `probes answered (${stats.answered})`);
}

// Tries fresh connections until one is refused; every one before must be answered, none left hanging.
async function untilRefused(port, boundMs = 10000) {
  const started = Date.now();
  const seen = [];
  while (Date.now() - started < boundMs) {
    const { outcome } = await probeOnce(port, { hangMs: 3000 });
    if (outcome === 'refused') return { ms: Date.now() - started, seen };
    seen.push(outcome);
    if (outcome === 'hung') break;
  }
  return { ms: null, seen };
}

test('kill -9 of every worker, three rounds: no connection refused, every probe waits and is answered', async (t) => {
  const server = await startServer({ files: { 'ok.txt': 'ok\n' }, args: ['--workers', '2'] });
  let result;
  try {
    result = await killAllWorkers(server, [server.port], ROUNDS);
  } finally {
    await server.stop();
  }
  assertNothingRefused(t, result, (ROUNDS + 1) * ANSWERS_PER_ROUND);
});

test('HTTPS on [::1] and plain HTTP on 127.0.0.1: both sockets are held through a kill -9 of every worker', async (t) => {
  const [port, sport] = [await getFreePort(), await getFreePort()];
  const server = await startServer({
    config: { port: `127.0.0.1:${port}`, sport: `[::1]:${sport}`, secure: true, disableToHTTPSRedirect: true, stateDirectory: 'state' },
    files: { 'ok.txt': 'ok\n' },
    args: ['--workers', '2'],
  });
  let result;
  try {
    result = await killAllWorkers(server, [port, { host: '::1', port: sport, tls: true }], 1);
  } finally {
    await server.stop();
  }
  assertNothingRefused(t, result, 4 * ANSWERS_PER_ROUND);
});

test('a stop lets go of the held sockets: new connections are refused at once, not left waiting', async (t) => {
  const script = "if (href === '/hold') { serverconsole.climessage('holding'); disableEndElseCallbackExecute = true; return; }\n";
  const server = await startServer({
    config: { useWebRootServerSideScript: true, shutdownTimeout: 8000 },
    files: { 'serverSideScript.js': script, 'ok.txt': 'ok\n' },
    args: ['--workers', '2'],
  });
  try {
    // A request that keeps its worker (and so the primary) busy draining for shutdownTimeout.
    const held = http.get({ host: '127.0.0.1', port: server.port, path: '/hold', agent: false });
    held.on('error', () => {});
    await server.waitForLog(/serverSideScript\.js: holding/);
    const since = server.stderr().length;
    server.signal('SIGTERM');
    await server.waitForLog(/SIGTERM: stopping gracefully/, 'stderr', since);
    const { ms, seen } = await untilRefused(server.port);
    t.diagnostic(`refused ${ms} ms after the stop was logged; before that: ${JSON.stringify(seen)}`);
    assert.ok(!seen.includes('hung'), `no connection left waiting in a backlog nobody accepts (${seen})`);
    assert.notEqual(ms, null, 'new connections are refused while the stop drains');
    assert.ok(isAlive(server.pid), 'the primary is still draining the held request');
    held.destroy();
  } finally {
    await server.stop();
  }
});

test('a reload that moves to another port lets the old port go', async (t) => {
  const server = await startServer({ files: { 'ok.txt': 'ok\n' }, args: ['--workers', '2'] });
  const newPort = await getFreePort();
  try {
    assert.equal((await probeOnce(server.port)).outcome, 'answered');
    const since = server.stderr().length;
    server.writeConfig({ port: newPort, workers: 2 });
    server.signal('SIGHUP');
    await server.waitForLog(/reload complete/, 'stderr', since);
    assert.equal((await probeOnce(newPort)).outcome, 'answered', 'the new port answers');
    const { ms, seen } = await untilRefused(server.port);
    t.diagnostic(`old port refused ${ms} ms after the reload completed; before that: ${JSON.stringify(seen)}`);
    assert.ok(!seen.includes('hung'), `no connection left waiting on the old port (${seen})`);
    assert.notEqual(ms, null, 'the old port refuses connections');
    // Nobody holds it any more: it can be bound again.
    const other = net.createServer();
    await new Promise((resolve, reject) => other.once('error', reject).listen(server.port, resolve));
    other.close();
    assert.equal((await probeOnce(newPort)).outcome, 'answered', 'the new port still answers');
  } finally {
    await server.stop();
  }
});

test('a reload that fails lets go of the new port its new worker opened', async (t) => {
  const server = await startServer({ files: { 'ok.txt': 'ok\n' }, args: ['--workers', '2'] });
  const [newPort, takenPort] = [await getFreePort(), await getFreePort()];
  const taken = net.createServer();
  await new Promise((resolve) => taken.listen(takenPort, resolve));
  try {
    const since = server.stderr().length;
    // The new worker listens on newPort, then fails on the HTTPS port someone else has.
    server.writeConfig({ port: newPort, secure: true, sport: takenPort, stateDirectory: 'state', workers: 2 });
    server.signal('SIGHUP');
    await server.waitForLog(/reload failed/, 'stderr', since);
    const { ms, seen } = await untilRefused(newPort);
    t.diagnostic(`the new port refused ${ms} ms after the reload failed; before that: ${JSON.stringify(seen)}`);
    assert.ok(!seen.includes('hung'), `no connection left waiting on the new port (${seen})`);
    assert.notEqual(ms, null, 'the new port refuses connections');
    assert.equal((await probeOnce(server.port)).outcome, 'answered', 'the old config still serves');
  } finally {
    taken.close();
    await server.stop();
  }
});

// With "rr" the primary's cluster module owns the socket and the workers never see it: nothing is
// held, and the port closes with the last worker as before (docs/limits.md). Nothing else changes.
test('schedulingPolicy "rr": kill -9 of every worker and a reload still bring the server back', async () => {
  const server = await startServer({ config: { schedulingPolicy: 'rr' }, files: { 'ok.txt': 'ok\n' }, args: ['--workers', '2'] });
  try {
    const since = server.stderr().length;
    for (const pid of readyWorkerPids(server)) process.kill(pid, 'SIGKILL');
    await waitForTwoReady(server, since);
    assert.equal((await probeOnce(server.port)).outcome, 'answered');
    const beforeReload = server.stderr().length;
    server.signal('SIGHUP');
    await server.waitForLog(/reload complete/, 'stderr', beforeReload);
    assert.equal((await probeOnce(server.port)).outcome, 'answered');
    assert.ok(isAlive(server.pid), 'the primary is alive');
    assert.deepEqual(server.stderr().filter((line) => /listening socket/.test(line)), [], 'no held-socket warning');
  } finally {
    await server.stop();
  }
});
