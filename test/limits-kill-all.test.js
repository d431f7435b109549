'use strict';
// Attack report, finding 17: kill -9 of every worker closed the listening socket (Node's cluster
// closes a shared socket once no worker holds it): 272 ms of ECONNREFUSED. The primary now keeps
// a descriptor of each TCP listening socket (lib/process/held-sockets.js), so connections wait in
// the kernel's backlog until a replacement accepts them. It lets go of them on a stop (new clients
// are refused, not left waiting) and, after a reload, of the ports no longer configured.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { startServer, getFreePort, readyWorkerPids, isAlive } = require('./support/helpers');

const ROUNDS = 3;
const PROBES = 3;
const ANSWERS_PER_ROUND = 20;

// One request on a fresh connection (no keep-alive: each probe is a new connect).
// Resolves { outcome: 'answered' | 'refused' | 'reset' | 'hung', ms }.
function probeOnce(port, { hangMs = 10000 } = {}) {
  const started = Date.now();
  return new Promise((resolve) => {
    const done = (outcome) => { req.destroy(); resolve({ outcome, ms: Date.now() - started }); };
    const req = http.get({ host: '127.0.0.1', port, path: '/ok.txt', agent: false }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode === 200 ? 'answered' : `status ${res.statusCode}`));
      res.on('error', () => done('reset'));
    });
    req.setTimeout(hangMs, () => done('hung'));
    req.on('error', (error) => done(error.code === 'ECONNREFUSED' ? 'refused' : 'reset'));
  });
}

// Probes in loops until stopped; counts the outcomes and remembers when refusals happened.
function probeContinuously(port) {
  const stats = { answered: 0, refused: 0, reset: 0, other: [], slowestMs: 0, refusedAt: [] };
  let running = true;
  const loop = async () => {
    while (running) {
      const { outcome, ms } = await probeOnce(port);
      if (outcome === 'answered') {
        stats.answered++;
        stats.slowestMs = Math.max(stats.slowestMs, ms);
      } else if (outcome === 'refused') {
        stats.refused++;
        stats.refusedAt.push(Date.now());
      } else if (outcome === 'reset') {
        stats.reset++; // a request in flight on a killed worker: nothing can save it
      } else {
        stats.other.push(outcome);
      }
    }
  };
  const loops = Array.from({ length: PROBES }, loop);
  return {
    stats,
    answered: () => stats.answered,
    stop: async () => { running = false; await Promise.all(loops); return stats; },
  };
}

async function waitForAnswers(probes, count) {
  const target = probes.answered() + count;
  const deadline = Date.now() + 30000;
  while (probes.answered() < target) {
    if (Date.now() > deadline) throw new Error(`only ${probes.answered()} probes answered, wanted ${target}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
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
  const probes = probeContinuously(server.port);
  const rounds = [];
  try {
    await waitForAnswers(probes, ANSWERS_PER_ROUND);
    for (let round = 0; round < ROUNDS; round++) {
      const victims = readyWorkerPids(server).filter(isAlive);
      assert.equal(victims.length, 2, `two live workers before round ${round + 1}`);
      const since = server.stderr().length;
      const before = { ...probes.stats };
      const killedAt = Date.now();
      for (const pid of victims) process.kill(pid, 'SIGKILL');
      // Both replacements ready, then answers again.
      await server.waitForLog(/worker \d+ ready/, 'stderr', since);
      const first = server.stderr().findIndex((line, i) => i >= since && /worker \d+ ready/.test(line));
      await server.waitForLog(/worker \d+ ready/, 'stderr', first + 1);
      const readyMs = Date.now() - killedAt;
      await waitForAnswers(probes, ANSWERS_PER_ROUND);
      const refusedTimes = probes.stats.refusedAt.filter((at) => at >= killedAt);
      rounds.push({
        readyMs,
        refused: probes.stats.refused - before.refused,
        refusedWindowMs: refusedTimes.length ? refusedTimes[refusedTimes.length - 1] - killedAt : 0,
        reset: probes.stats.reset - before.reset,
      });
    }
  } finally {
    await probes.stop();
    await server.stop();
  }
  const { stats } = probes;
  t.diagnostic(`rounds: ${JSON.stringify(rounds)}; answered ${stats.answered}, refused ${stats.refused}, reset ${stats.reset}, slowest answer ${stats.slowestMs} ms`);
  assert.equal(stats.refused, 0, `no connection refused (refused per round: ${rounds.map((r) => `${r.refused} over ${r.refusedWindowMs} ms`).join(', ')})`);
  assert.deepEqual(stats.other, [], 'no probe left hanging or answered with an error');
  assert.ok(stats.answered >= (ROUNDS + 1) * ANSWERS_PER_ROUND, `probes answered (${stats.answered})`);
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
