'use strict';
// Test helpers: start svr.js as a real process on a free port with a temporary config and
// web root, wait on its log lines (never on fixed sleeps), and make plain HTTP requests.

const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const SVR = path.join(__dirname, '..', '..', 'svr.js');
const START_TIMEOUT_MS = 20000;

// A port for a server a test starts. Not one the kernel hands out itself (port 0): those come from
// the ephemeral range (32768-60999 on Linux), which the client connections of the test files
// running beside this one use too, so one could take the port before the server binds it ("port
// already in use", seen with five files at once). Below that range nothing takes a port unasked.
// A random pick is reserved for this process with a file in PORT_LOCKS (O_EXCL), so that two test
// files never pick the same port between the pick and the server's bind (seen once too), then
// checked free on every address.
const PORT_RANGE = [20000, 32000];
const PORT_LOCKS = path.join(os.tmpdir(), 'svr-test-ports');
const reservedPorts = new Set();

function reservePort(port) {
  if (reservedPorts.has(port)) return false;
  fs.mkdirSync(PORT_LOCKS, { recursive: true });
  const file = path.join(PORT_LOCKS, String(port));
  try {
    fs.writeFileSync(file, String(process.pid), { flag: 'wx' });
  } catch (error) {
    if (error.code !== 'EEXIST') throw error;
    const owner = Number(fs.readFileSync(file, 'utf8'));
    if (owner === process.pid || isAlive(owner)) return false;
    fs.writeFileSync(file, String(process.pid)); // left by a test process that is gone
  }
  if (reservedPorts.size === 0) {
    process.on('exit', () => {
      for (const reserved of reservedPorts) fs.rmSync(path.join(PORT_LOCKS, String(reserved)), { force: true });
    });
  }
  reservedPorts.add(port);
  return true;
}

function isFree(port) {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, ipv6Only: false }, () => server.close(() => resolve(true)));
  });
}

async function getFreePort() {
  const [low, high] = PORT_RANGE;
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (reservePort(port) && await isFree(port)) return port;
  }
  throw new Error(`no free port found in ${low}-${high}`);
}

// Every temporary directory a test process made is removed when it exits, also those of tests
// that never stop their server or only write a config for a CLI run (they used to stay in /tmp).
const tempDirs = [];
process.on('exit', () => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

function makeTempDir(prefix = 'svr-test-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

// files: { 'relative/path': string | Buffer }
function writeFiles(root, files) {
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(root, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
  }
}

// Collects a stream's lines (or lines given to add()) and lets a test wait for one that matches.
class LineWatcher {
  constructor(stream) {
    this.lines = [];
    this.waiters = [];
    if (!stream) return;
    let partial = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => {
      const parts = (partial + chunk).split('\n');
      partial = parts.pop();
      for (const line of parts) this.add(line);
    });
  }

  add(line) {
    this.lines.push(line);
    this.waiters = this.waiters.filter((waiter) => !waiter.check());
  }

  // Resolves with the first line at index >= since that matches.
  waitFor(pattern, since = 0, timeoutMs = START_TIMEOUT_MS) {
    return new Promise((resolve, reject) => {
      const waiter = {
        check: () => {
          const index = this.lines.findIndex((line, i) => i >= since && pattern.test(line));
          if (index === -1) return false;
          clearTimeout(waiter.timer);
          resolve(this.lines[index]);
          return true;
        },
      };
      if (waiter.check()) return;
      waiter.timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`timed out waiting for ${pattern}; output so far:\n${this.lines.join('\n')}`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }
}

// options.fdLimit: run svr with that many descriptors (ulimit -n), the rest goes to spawn().
function spawnSvr(args, { fdLimit, ...options } = {}) {
  const command = fdLimit ? ['sh', ['-c', `ulimit -n ${Number(fdLimit)} && exec "$0" "$@"`, process.execPath, SVR, ...args]] : [process.execPath, [SVR, ...args]];
  const proc = spawn(...command, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
  const out = new LineWatcher(proc.stdout);
  const err = new LineWatcher(proc.stderr);
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  return { proc, out, err, exited };
}

// Runs svr.js to completion (for --check, --version, start-up failures).
async function runSvr(args, options = {}) {
  const { out, err, exited } = spawnSvr(args, options);
  const { code, signal } = await exited;
  return { code, signal, stdout: out.lines.join('\n'), stderr: err.lines.join('\n') };
}

// Starts a server with { config, files, args } and waits for its banner.
async function startServer({ config = {}, files = {}, args = [], env, spawnOptions = {} } = {}) {
  const dir = makeTempDir();
  const root = path.join(dir, 'web');
  fs.mkdirSync(root);
  writeFiles(root, files);
  const port = config.port ?? await getFreePort();
  const configFile = path.join(dir, 'svr-config.json');
  const writeConfig = (overrides) => fs.writeFileSync(configFile, JSON.stringify({ port, wwwroot: 'web', workers: 1, ...overrides }, null, 2));
  writeConfig(config);
  const child = spawnSvr(['--config', configFile, ...args], { env: { ...process.env, ...env }, ...spawnOptions });
  const server = {
    dir, root, port, configFile, writeConfig,
    url: `http://127.0.0.1:${port}`,
    proc: child.proc,
    pid: child.proc.pid,
    exited: child.exited,
    stdout: () => child.out.lines,
    stderr: () => child.err.lines,
    // since: a line count (e.g. server.stderr().length before the action) to ignore older lines
    waitForLog: (pattern, stream = 'stderr', since = 0, timeoutMs) =>
      (stream === 'stdout' ? child.out : child.err).waitFor(pattern, since, timeoutMs),
    signal: (name) => child.proc.kill(name),
    stop: async () => {
      if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGTERM');
      const result = await child.exited;
      fs.rmSync(dir, { recursive: true, force: true });
      return result;
    },
  };
  const started = server.waitForLog(/listening on /);
  const failed = child.exited.then(({ code }) => {
    throw new Error(`svr exited with code ${code} before listening:\n${child.err.lines.join('\n')}`);
  });
  failed.catch(() => {});
  try {
    await Promise.race([started, failed]);
  } catch (error) {
    child.proc.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return server;
}

// Plain HTTP request; resolves with { status, headers, body, text }. path: a request target to
// send instead of the URL's, such as an absolute-form one ("http://a.example/x", as a client of a
// forward proxy sends it).
// Without an agent, Node's global agent keeps connections alive between requests. A client
// stalled past the server's keep-alive time (a loaded machine: the suite runs files side by side)
// can send its next request on a connection the server has just closed; a GET or HEAD that meets
// that closes before any response is sent once more on a new connection, as browsers and Node's
// documentation do.
function request(url, options = {}) {
  return requestOnce(url, options).catch((error) => {
    const method = options.method || 'GET';
    const staleConnection = error.onReusedConnection && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
    if (!staleConnection || (method !== 'GET' && method !== 'HEAD')) throw error;
    return requestOnce(url, options);
  });
}

function requestOnce(url, { method = 'GET', headers = {}, body, agent, timeout = 10000, path } = {}) {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = http.request(url, { method, headers, agent, timeout, ...(path === undefined ? {} : { path }) }, (res) => {
      answered = true;
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => {
        const buffer = Buffer.concat(chunks);
        resolve({ status: res.statusCode, headers: res.headers, body: buffer, text: buffer.toString('utf8') });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`request to ${url} timed out`)));
    req.on('error', (error) => reject(Object.assign(error, { onReusedConnection: req.reusedSocket && !answered })));
    req.end(body);
  });
}

// Worker pids as the primary announced them ("worker PID ready"), in order.
function readyWorkerPids(server) {
  return server.stderr().map((line) => /worker (\d+) ready/.exec(line)).filter(Boolean).map((m) => Number(m[1]));
}

// A test that needs a Debian package: find the command, or install the package when we may
// (root with apt-get, as in CI). Returns { path } or { skip: 'one-line reason' }.
function ensureDebianPackage(command, pkg = command) {
  const found = commandPath(command);
  if (found) return { path: found };
  if (process.getuid() !== 0) return { skip: `${command} is not installed and installing ${pkg} needs root` };
  if (!commandPath('apt-get')) return { skip: `${command} is not installed and there is no apt-get to install ${pkg}` };
  const result = aptInstall(pkg);
  const installed = commandPath(command);
  if (!installed) return { skip: `apt-get install ${pkg} failed: ${(result.stderr || '').trim().split('\n').pop()}` };
  return { path: installed };
}

// apt-get install of one package, as root. Test files run side by side and several install
// packages on a fresh machine: each waits up to 5 minutes for the dpkg lock another holds
// (without it, one install failed at once and its test was skipped). Stale or missing package
// lists are updated once. Returns spawnSync's result.
function aptInstall(pkg) {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const lock = ['-o', 'DPkg::Lock::Timeout=300'];
  const install = () => spawnSync('apt-get', [...lock, 'install', '-y', '-q', '--no-install-recommends', pkg], { encoding: 'utf8', env, timeout: 600000 });
  let result = install();
  if (result.status !== 0) {
    spawnSync('apt-get', [...lock, 'update', '-q'], { env, timeout: 300000 });
    result = install();
  }
  return result;
}

function commandPath(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).stdout.trim();
}

// Who runs a check that root would pass by ignoring permission bits (a mode-000 file, "must run
// as root"): this process itself when it is not root ({}), else the user nobody ({ uid, gid }, for
// spawn's options). Returns { user } or { skip: 'one-line reason' }.
function unprivilegedUser() {
  if (process.getuid() !== 0) return { user: {} };
  const line = fs.readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith('nobody:'));
  if (!line) return { skip: 'running as root and there is no user nobody to run as' };
  const [, , uid, gid] = line.split(':');
  return { user: { uid: Number(uid), gid: Number(gid) } };
}

// Polls check() until it holds (for what sends no event: a counter, a process's exit), at most
// timeoutMs. Resolves true when it held, false when the time ran out: the caller asserts, with
// its own message.
async function waitUntil(check, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// The schema's top-level defaults, as a start applies them: for tests that call lib/ functions
// directly with a few keys, since lib/ reads every key from a complete config.
function schemaDefaults() {
  const schema = require('../../config/svr-config.schema.json');
  return Object.fromEntries(Object.entries(schema.properties)
    .filter(([, property]) => property.default !== undefined)
    .map(([key, property]) => [key, structuredClone(property.default)]));
}

module.exports = { schemaDefaults, SVR, LineWatcher, ensureDebianPackage, getFreePort, makeTempDir, writeFiles, spawnSvr, runSvr, startServer, request, readyWorkerPids, isAlive, waitUntil, unprivilegedUser, aptInstall };
