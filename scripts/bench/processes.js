'use strict';
// Starting and stopping the servers under test, and reading their memory from /proc.
const { spawn } = require('child_process');
const fs = require('fs');
const http = require('http');
const http2 = require('http2');
const https = require('https');
const net = require('net');
const { parentOf } = require('./pinning');

const START_TIMEOUT_MS = 15000;
const STOP_TIMEOUT_MS = 5000;
const POLL_INTERVAL_MS = 5;
const NON_200_GRACE_MS = 2000;

const running = new Set();

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// One HTTP/1.1 request over a fresh connection (https: the bench's self-signed certificate is
// accepted); resolves with status, headers, body and, over TLS, the protocol version negotiated.
function fetchOnce(url, headers = {}, timeoutMs = 10000) {
  const secure = url.startsWith('https:');
  return new Promise((resolve, reject) => {
    const options = { headers, agent: false, ...(secure ? { rejectUnauthorized: false } : {}) };
    const req = (secure ? https : http).get(url, options, (res) => {
      const tlsVersion = secure ? res.socket.getProtocol() : null;
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), tlsVersion }));
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

// One HTTP/2 request (TLS, certificate accepted); resolves like fetchOnce plus the ALPN protocol.
function fetchH2Once(url, headers = {}, timeoutMs = 10000) {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url, { rejectUnauthorized: false });
    const fail = (err) => {
      session.destroy();
      reject(err);
    };
    session.once('error', fail);
    const timer = setTimeout(() => fail(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const { pathname, search } = new URL(url);
    const stream = session.request({ ':path': pathname + search, ...headers });
    const chunks = [];
    let responseHeaders = {};
    stream.on('response', (received) => (responseHeaders = received));
    stream.on('data', (chunk) => chunks.push(chunk));
    stream.once('error', fail);
    stream.on('end', () => {
      clearTimeout(timer);
      const alpn = session.alpnProtocol;
      const tlsVersion = session.socket ? session.socket.getProtocol() : null;
      session.close();
      resolve({ status: responseHeaders[':status'], headers: responseHeaders, body: Buffer.concat(chunks), alpn, tlsVersion });
    });
    stream.end();
  });
}

function tail(text, lines = 5) {
  return String(text).trim().split('\n').slice(-lines).join('\n');
}

const elapsedMs = (since) => Number(process.hrtime.bigint() - since) / 1e6;

// Spawns `command args`, stdout and stderr to logFile, then polls readyUrl until it answers 200.
// A server that answers, but never 200, counts as started after NON_200_GRACE_MS (its scenarios
// then show the errors). Resolves with { proc, pid, startupMs (to the first 200, or null),
// firstAnswerMs, lastStatus }; rejects with the reason and the log's last lines.
async function startProcess({ command, args, cwd, env, logFile, readyUrl }) {
  const logFd = fs.openSync(logFile, 'a');
  const started = process.hrtime.bigint();
  const proc = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', logFd, logFd] });
  fs.closeSync(logFd);
  running.add(proc);
  proc.exitedPromise = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  proc.exitedPromise.then(() => running.delete(proc));
  proc.once('error', () => {}); // reported through 'exit' / the readiness timeout
  const deadline = Date.now() + START_TIMEOUT_MS;
  let lastProblem = 'no answer';
  let firstAnswerMs = null;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      const { code, signal } = await proc.exitedPromise;
      throw new Error(`exited (${signal || code}) before answering: ${tail(readLog(logFile))}`);
    }
    try {
      const res = await fetchOnce(readyUrl, {}, 1000);
      if (firstAnswerMs === null) firstAnswerMs = elapsedMs(started);
      if (res.status === 200) return { proc, pid: proc.pid, startupMs: elapsedMs(started), firstAnswerMs, lastStatus: 200 };
      lastProblem = `answered ${res.status}`;
      if (elapsedMs(started) - firstAnswerMs > NON_200_GRACE_MS) return { proc, pid: proc.pid, startupMs: null, firstAnswerMs, lastStatus: res.status };
    } catch (err) {
      lastProblem = err.code || err.message;
    }
    await delay(POLL_INTERVAL_MS);
  }
  await stopProcess(proc);
  throw new Error(`no answer from ${readyUrl} within ${START_TIMEOUT_MS} ms (${lastProblem}): ${tail(readLog(logFile))}`);
}

function readLog(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function delay(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// SIGTERM; SIGKILL if it has not exited in time (and then its orphaned workers too).
async function stopProcess(proc) {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const children = childPids(proc.pid);
  proc.kill('SIGTERM');
  const timer = delay(STOP_TIMEOUT_MS).then(() => 'timeout');
  if ((await Promise.race([proc.exitedPromise, timer])) === 'timeout') {
    proc.kill('SIGKILL');
    await proc.exitedPromise;
  }
  for (const pid of children) killIfAlive(pid); // workers orphaned by a forced stop
}

function killIfAlive(pid) {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

// Last resort when the harness itself is exiting: no server is left behind.
function killAllStarted() {
  for (const proc of running) {
    for (const pid of childPids(proc.pid)) killIfAlive(pid);
    killIfAlive(proc.pid);
  }
}

function childPids(pid) {
  let entries = [];
  try {
    entries = fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  return entries.map(Number).filter((candidate) => parentOf(candidate) === pid);
}

function rssKiB(pid) {
  try {
    const match = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+)\s+kB/m);
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

function programOf(pid) {
  try {
    return fs.readlinkSync(`/proc/${pid}/exe`);
  } catch {
    return null;
  }
}

// RSS of the processes that serve: the children of a primary/master running its program (not
// helpers such as svr's orphan reaper, a shell), or the process itself.
function workerRss(pid) {
  const program = programOf(pid);
  const children = childPids(pid).filter((child) => programOf(child) === program);
  const pids = children.length ? children : [pid];
  const perProcessKiB = pids.map(rssKiB).filter((kib) => kib !== null);
  return { processes: perProcessKiB.length, perProcessKiB, primaryKiB: children.length ? rssKiB(pid) : null };
}

module.exports = { freePort, fetchOnce, fetchH2Once, startProcess, stopProcess, killAllStarted, workerRss, delay, childPids };
