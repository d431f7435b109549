#!/usr/bin/env node
'use strict';

// Handshake throughput: how many NEW TLS connections per second a server accepts.
// Every connection is fresh (no session resumption, no keep-alive): connect,
// handshake, send one small HTTP/1.1 request with "Connection: close", read the
// whole response, close. A benchmark, not a test.
//
//   node scripts/bench-tls-handshake.js --url https://127.0.0.1:8443/ [-n 2000] [-c 32] [--tls TLSv1.3] [--no-request]
//   node scripts/bench-tls-handshake.js --svr [--workers N | --single-threaded] [--http2] [-n 2000] [-c 32]
//       (--svr starts svr.js itself with secure:true on free ports, a generated
//        certificate in a temporary state directory, and stops it afterwards)
//   node scripts/bench-tls-handshake.js --baseline [-n 2000] [-c 32]
//       (a bare Node https server in one child process with the same kind of
//        certificate, answering "hello": what one process can do, for comparison)

const tls = require('tls');
const fs = require('fs');
const os = require('os');
const path = require('path');
const net = require('net');
const { spawn } = require('child_process');
const minimist = require('minimist');

const argv = minimist(process.argv.slice(2), {
  string: ['url', 'tls', 'workers'],
  boolean: ['svr', 'baseline', 'single-threaded', 'http2', 'request', 'help'],
  default: { n: 2000, c: 32, request: true },
  alias: { n: 'connections', c: 'concurrency', h: 'help' },
});

if (argv.help || (!argv.url && !argv.svr && !argv.baseline)) {
  process.stdout.write(fs.readFileSync(__filename, 'utf8').split('\n').slice(3, 16).map((l) => l.replace(/^\/\/ ?/, '')).join('\n') + '\n');
  process.exit(argv.help ? 0 : 2);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startSvr() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-bench-tls-'));
  fs.mkdirSync(path.join(dir, 'www'));
  fs.writeFileSync(path.join(dir, 'www', 'index.html'), 'hello\n');
  const port = await freePort();
  const sport = await freePort();
  const config = {
    port, sport, secure: true, wwwroot: 'www', stateDirectory: 'state', enableLogging: false,
    workers: argv.workers ? Number(argv.workers) : null, enableHTTP2: argv.http2,
  };
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify(config, null, 2));
  const proc = spawn(process.execPath, [path.join(__dirname, '..', 'svr.js'), '--config', configFile, ...(argv['single-threaded'] ? ['--single-threaded'] : [])], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  await new Promise((resolve, reject) => {
    proc.stderr.on('data', (d) => {
      err += d;
      if (/listening on .*https:\/\//.test(err)) resolve();
    });
    proc.once('exit', (code) => reject(new Error('svr exited ' + code + ':\n' + err)));
  });
  const workers = argv['single-threaded'] ? 'single-threaded' : (err.match(/(\d+) workers?/) || [])[1];
  return { url: `https://127.0.0.1:${sport}/`, proc, dir, workers: workers || config.workers || 'default' };
}

const BASELINE_SERVER = `
const https = require('https');
const { generateSelfSigned } = require(process.argv[1]);
const { certPem, keyPem } = generateSelfSigned({ names: [{ type: 'dns', value: 'localhost' }] });
const server = https.createServer({ cert: certPem, key: keyPem, minVersion: 'TLSv1.2' }, (req, res) => res.end('hello\\n'));
server.listen(0, '127.0.0.1', () => process.stderr.write('listening on https://127.0.0.1:' + server.address().port + '\\n'));
`;

async function startBaseline() {
  const proc = spawn(process.execPath, ['-e', BASELINE_SERVER, path.join(__dirname, '..', 'lib', 'net', 'certificate.js')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const port = await new Promise((resolve, reject) => {
    proc.stderr.on('data', (d) => {
      err += d;
      const m = /listening on https:\/\/127\.0\.0\.1:(\d+)/.exec(err);
      if (m) resolve(m[1]);
    });
    proc.once('exit', (code) => reject(new Error('baseline server exited ' + code + ':\n' + err)));
  });
  return { url: `https://127.0.0.1:${port}/`, proc, dir: null, workers: 'bare Node https, 1 process' };
}

function oneConnection(u, request) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const socket = tls.connect({
      host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || 443),
      servername: net.isIP(u.hostname) ? undefined : u.hostname,
      rejectUnauthorized: false, minVersion: argv.tls || undefined, maxVersion: argv.tls || undefined,
      ALPNProtocols: ['http/1.1'],
    });
    let handshake = 0;
    socket.once('secureConnect', () => {
      handshake = Number(process.hrtime.bigint() - t0) / 1e6;
      if (!request) { socket.end(); return; }
      socket.write(`GET ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: close\r\n\r\n`);
    });
    let status = 0;
    let first = '';
    socket.on('data', (d) => {
      if (!status) {
        first += d.toString('latin1');
        const m = /^HTTP\/1\.1 (\d{3})/.exec(first);
        if (m) status = Number(m[1]);
      }
    });
    socket.once('error', reject);
    socket.once('close', () => {
      if (request && !status) return reject(new Error('no response'));
      resolve({ handshake, total: Number(process.hrtime.bigint() - t0) / 1e6, status });
    });
  });
}

// CPU time (ms) used so far by a server process and its children (the workers), from /proc:
// unlike the wall-clock rate, this hardly depends on what else the machine is doing.
function serverCpuMs(pid) {
  if (!pid || !fs.existsSync('/proc/self/stat')) return null;
  const ticks = (p) => {
    try {
      const fields = fs.readFileSync(`/proc/${p}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
      return Number(fields[11]) + Number(fields[12]); // utime + stime
    } catch {
      return 0;
    }
  };
  let children = [];
  try {
    children = fs.readdirSync(`/proc/${pid}/task`).flatMap((t) =>
      fs.readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean));
  } catch { /* no children file: count the process alone */ }
  return [pid, ...children].reduce((sum, p) => sum + ticks(p), 0) * 10; // USER_HZ is 100
}

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

async function run(url, n, c, request) {
  const u = new URL(url);
  const results = [];
  let errors = 0;
  let next = 0;
  const t0 = process.hrtime.bigint();
  async function lane() {
    while (next < n) {
      next++;
      try {
        results.push(await oneConnection(u, request));
      } catch {
        errors++;
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(c, n) }, lane));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const hs = results.map((r) => r.handshake).sort((a, b) => a - b);
  const non2xx = results.filter((r) => request && (r.status < 200 || r.status >= 400)).length;
  return { seconds, ok: results.length, errors, non2xx, rate: results.length / seconds, p50: pct(hs, 0.5), p99: pct(hs, 0.99) };
}

(async () => {
  let svr = null;
  let url = argv.url;
  if (argv.svr || argv.baseline) {
    svr = argv.svr ? await startSvr() : await startBaseline();
    url = svr.url;
  }
  try {
    const n = Number(argv.n);
    const c = Number(argv.c);
    // warm-up: JIT, worker start-up, the first handshakes of each worker
    await run(url, Math.min(200, n), c, argv.request);
    const cpuBefore = svr ? serverCpuMs(svr.proc.pid) : null;
    const r = await run(url, n, c, argv.request);
    const cpuAfter = svr ? serverCpuMs(svr.proc.pid) : null;
    const what = argv.request ? 'handshake + 1 request + close' : 'handshake + close';
    console.log(`${url} (${svr ? (argv.svr ? 'svr, workers: ' : '') + svr.workers + ', ' : ''}${os.cpus().length} CPUs, client in 1 process, node ${process.version})`);
    console.log(`${r.ok} new TLS connections (${what}), concurrency ${c}: ${r.seconds.toFixed(2)} s, ` +
      `${r.rate.toFixed(0)} connections/s, handshake p50 ${r.p50.toFixed(1)} ms p99 ${r.p99.toFixed(1)} ms, ` +
      `errors ${r.errors}${argv.request ? ', non-2xx/3xx ' + r.non2xx : ''}`);
    if (cpuBefore !== null && cpuAfter !== null && cpuAfter > cpuBefore) {
      const perConnection = (cpuAfter - cpuBefore) / r.ok;
      console.log(`server CPU: ${(cpuAfter - cpuBefore) / 1000} s for ${r.ok} connections = ${perConnection.toFixed(2)} ms each, ` +
        `${(1000 / perConnection).toFixed(0)} connections per server CPU-second`);
    }
    if (r.errors) process.exitCode = 1;
  } finally {
    if (svr) {
      svr.proc.kill('SIGTERM');
      await new Promise((resolve) => svr.proc.once('exit', resolve));
      if (svr.dir) fs.rmSync(svr.dir, { recursive: true, force: true });
    }
  }
})().catch((err) => {
  console.error(err.stack || String(err));
  process.exit(1);
});
