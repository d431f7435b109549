'use strict';
// A booted Debian guest for test/system/service.test.js: systemd-nspawn with a volatile overlay over a
// trixie root (test/support/guest/root.sh), the checkout bound read-only at /src, commands run in it
// with nsenter. Nothing here sleeps a fixed time: every wait polls a condition with a deadline.

const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const CHECKOUT = path.resolve(__dirname, '..', '..', '..');
const GUEST_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

function which(cmd) {
  for (const dir of (process.env.PATH || '').split(':').concat(['/usr/sbin', '/sbin', '/usr/bin'])) {
    try { fs.accessSync(path.join(dir, cmd), fs.constants.X_OK); return path.join(dir, cmd); } catch {}
  }
  return null;
}

// Why the guest test cannot run here, or null when it can.
function skipReason() {
  if (process.env.SVR_TEST_GUEST === '0') return 'SVR_TEST_GUEST=0';
  if (process.platform !== 'linux') return 'needs Linux (systemd-nspawn)';
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return 'needs root (systemd-nspawn, debootstrap)';
  if (!which('nsenter')) return 'no nsenter';
  if (!which('systemd-nspawn') && !which('apt-get')) return 'no systemd-nspawn and no apt-get to install it';
  return null;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Poll fn() until it returns a truthy value; returns that value. Throws with `what` on timeout.
async function until(what, fn, { timeout = 30000, interval = 100 } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) { last = err; }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeout} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    }
    await sleep(interval);
  }
}

function run(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], ...opts });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => { stdout += d; });
    child.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
    child.on('error', reject);
    const timer = opts.timeout ? setTimeout(() => child.kill('SIGKILL'), opts.timeout) : null;
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.on('error', () => {}); // EPIPE when the command does not read its input
    child.stdin.end(opts.input || '');
  });
}

class Guest {
  // binds: more read-only bind mounts, [[hostDir, guestDir], ...].
  constructor({ binds = [] } = {}) {
    this.binds = binds;
    this.name = `svr-test-${process.pid}`;
    this.work = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-guest-'));
    this.root = null;
    this.consoleLog = path.join(this.work, 'console.log');
    this.nspawn = null;
    this.pid1 = null;
    this.timings = {};
  }

  // The cached root (built by debootstrap on the first run); returns how long it took in ms. The
  // guest boots from it directly: --volatile=overlay keeps its writes in a tmpfs.
  prepare() {
    const t0 = Date.now();
    const r = spawnSync(path.join(CHECKOUT, 'test/support/guest/root.sh'), ['cached'], {
      stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', timeout: 20 * 60 * 1000,
    });
    if (r.status !== 0) {
      throw new Error(`test/support/guest/root.sh cached failed (${r.status ?? r.signal}):\n${(r.stderr || '').slice(-3000)}`);
    }
    this.root = r.stdout.trim();
    this.setupLog = r.stderr;
    this.timings.prepare = Date.now() - t0;
    return this.timings.prepare;
  }

  async boot() {
    const t0 = Date.now();
    const nspawn = which('systemd-nspawn');
    const out = fs.openSync(this.consoleLog, 'a');
    // If this test process dies without cleaning up, nspawn gets SIGTERM and shuts the guest down.
    const setpriv = which('setpriv');
    const cmd = setpriv ? [setpriv, '--pdeathsig', 'TERM', '--', nspawn] : [nspawn];
    this.nspawn = spawn(cmd[0], [...cmd.slice(1),
      '-D', this.root, '-M', this.name,
      '--register=no', '--keep-unit', '--private-network', '--volatile=overlay',
      `--bind-ro=${CHECKOUT}:/src`, ...this.binds.map(([from, to]) => `--bind-ro=${from}:${to}`),
      // One CPU: the guest is a 1-vCPU machine, so the default config starts one worker (half the
      // guest's Node processes of a 2-CPU guest), and the guest leaves the other core to the suite.
      '--cpu-affinity=0',
      '--console=read-only', '-b',
    ], { stdio: ['ignore', out, out] });
    fs.closeSync(out);
    this.exited = new Promise((resolve) => this.nspawn.on('exit', (code, signal) => resolve({ code, signal })));
    let gone = false;
    this.exited.then(() => { gone = true; });
    // The guest's PID 1 is the `systemd` child of the nspawn process.
    this.pid1 = await until('the guest systemd (PID 1) to appear', () => {
      if (gone) throw new Error(`systemd-nspawn exited:\n${this.console().slice(-2000)}`);
      return childrenOf(this.nspawn.pid).find((pid) => comm(pid) === 'systemd');
    }, { timeout: 30000, interval: 50 });
    // Boot finished: the manager answers and has no more jobs.
    await until('the guest to finish booting', async () => {
      if (gone) throw new Error(`systemd-nspawn exited:\n${this.console().slice(-2000)}`);
      const r = await this.exec('systemctl is-system-running --wait', { timeout: 60000 });
      return /^(running|degraded)/.test(r.stdout.trim());
    }, { timeout: 90000, interval: 100 });
    this.timings.boot = Date.now() - t0;
  }

  console() {
    try { return fs.readFileSync(this.consoleLog, 'utf8'); } catch { return ''; }
  }

  // Run a shell command line in the guest as root; resolves {code, stdout, stderr}.
  exec(script, opts = {}) {
    if (!this.pid1) return Promise.reject(new Error('guest not booted'));
    return run('nsenter', ['-t', String(this.pid1), '-a', '--',
      'env', '-i', `PATH=${GUEST_PATH}`, 'LANG=C.UTF-8', 'HOME=/root', 'sh', '-c', script],
    { timeout: 120000, ...opts });
  }

  // Like exec, but a non-zero exit is an error that shows the command and its output.
  async sh(script, opts) {
    const r = await this.exec(script, opts);
    if (r.code !== 0) {
      throw new Error(`in the guest: \`${script}\` exited ${r.code ?? r.signal}\n` +
        `stdout: ${r.stdout.slice(-3000)}\nstderr: ${r.stderr.slice(-3000)}`);
    }
    return r.stdout;
  }

  // Start a long-running process in the guest (stdin, stdout, stderr piped).
  spawn(script) {
    const child = spawn('nsenter', ['-t', String(this.pid1), '-a', '--',
      'env', '-i', `PATH=${GUEST_PATH}`, 'LANG=C.UTF-8', 'sh', '-c', script], { stdio: 'pipe' });
    child.stdin.on('error', () => {});
    return child;
  }

  // Power the guest off. The overlay (--volatile=overlay) took every change, so boot() starts again
  // from the pristine root, as a fresh machine.
  async stop() {
    if (this.nspawn && this.nspawn.exitCode === null && this.nspawn.signalCode === null) {
      if (this.pid1) await this.exec('systemctl poweroff', { timeout: 10000 }).catch(() => {});
      let timer;
      const stopped = await Promise.race([this.exited,
        new Promise((resolve) => { timer = setTimeout(resolve, 30000, null); })]);
      clearTimeout(timer);
      if (!stopped) {
        this.nspawn.kill('SIGKILL');
        await this.exited;
      }
    }
    this.pid1 = null;
  }

  async shutdown() {
    await this.stop();
    fs.rmSync(this.work, { recursive: true, force: true });
  }
}

function childrenOf(ppid) {
  const out = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === ppid) out.push(Number(entry));
    } catch {}
  }
  return out;
}

function comm(pid) {
  try { return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim(); } catch { return null; }
}

// Parse `curl -sS -i` output (the last response, if curl followed anything) into {status, headers, body}.
function parseCurl(text) {
  const sep = text.indexOf('\r\n\r\n');
  const head = sep >= 0 ? text.slice(0, sep) : text;
  const body = sep >= 0 ? text.slice(sep + 4) : '';
  const lines = head.split('\r\n');
  const status = Number((/^HTTP\/[\d.]+ (\d{3})/.exec(lines[0]) || [])[1]);
  const headers = {};
  for (const line of lines.slice(1)) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return { status, headers, body };
}

module.exports = { Guest, skipReason, until, parseCurl, CHECKOUT };
