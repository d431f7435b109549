#!/usr/bin/env node
'use strict';
// Benchmark (not a test): a CPU-bound serverSideScript.js served by N workers vs --single-threaded.
// Needs wrk (apt-get install -y wrk).
//
//   node scripts/bench-ssjs.js [--workers N] [--duration 10] [--connections 32] [--n 2000000]
//
// Starts svr on a temporary site whose script counts the primes below n (sieve of Eratosthenes)
// for every request to /primes, runs wrk against it once single-threaded and once with N workers
// (default: one per CPU), and prints requests/s and latency for both.

const { execFileSync } = require('node:child_process');
const os = require('node:os');
const minimist = require('minimist');
const { startServer, request } = require('../test/support/helpers');

const SCRIPT = `// Counts the primes below n: a CPU-bound job that keeps one core busy for a while.
if (href === '/primes') {
  const n = Math.min(Number(uobject.query.n) || 100000, 10000000);
  const composite = new Uint8Array(n);
  let count = 0;
  for (let i = 2; i < n; i++) {
    if (composite[i]) continue;
    count++;
    for (let j = i * i; j < n; j += i) composite[j] = 1;
  }
  res.writeHead(200, { 'Content-Type': 'text/plain' });
  res.end('primes below ' + n + ': ' + count + ' (worker ' + process.pid + ')\\n');
  return;
}
`;

function wrk(url, { duration, connections, threads }) {
  const output = execFileSync('wrk', ['-t', String(threads), '-c', String(connections), '-d', `${duration}s`, '--latency', url], { encoding: 'utf8' });
  const number = (re) => { const m = re.exec(output); return m ? m[1] : '?'; };
  return {
    rps: Number(number(/Requests\/sec:\s+([\d.]+)/)),
    p50: number(/\s50%\s+([\d.]+\w+)/),
    p99: number(/\s99%\s+([\d.]+\w+)/),
    errors: /Non-2xx|Socket errors/.test(output) ? output.split('\n').filter((l) => /Non-2xx|Socket errors/.test(l)).join('; ') : 'none',
  };
}

async function run(label, args, options) {
  const server = await startServer({ config: { enableLogging: false }, files: { 'serverSideScript.js': SCRIPT }, args });
  try {
    const url = `${server.url}/primes?n=${options.n}`;
    const probe = await request(url);
    if (probe.status !== 200) throw new Error(`${label}: ${probe.status} ${probe.text}`);
    wrk(url, { ...options, duration: 2 }); // warm-up (JIT)
    const result = wrk(url, options);
    console.log(`${label.padEnd(22)} ${result.rps.toFixed(1).padStart(9)} req/s   p50 ${result.p50.padStart(8)}   p99 ${result.p99.padStart(8)}   errors: ${result.errors}`);
    return result;
  } finally {
    await server.stop();
  }
}

async function main() {
  const argv = minimist(process.argv.slice(2));
  const cpus = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  const workers = Number(argv.workers) || cpus;
  const options = { duration: Number(argv.duration) || 10, connections: Number(argv.connections) || 32, threads: 1, n: Number(argv.n) || 2000000 };
  console.log(`svr, CPU-bound serverSideScript.js (primes below ${options.n}); ${cpus} CPU(s), ${os.cpus()[0].model}, Node ${process.version}`);
  console.log(`wrk -t${options.threads} -c${options.connections} -d${options.duration}s (on the same machine)\n`);
  const single = await run('--single-threaded', ['--single-threaded'], options);
  const clustered = await run(`--workers ${workers}`, ['--workers', String(workers)], options);
  console.log(`\nspeed-up: ${(clustered.rps / single.rps).toFixed(2)}x with ${workers} workers`);
}

main().catch((error) => {
  console.error(error.message);
  process.exit(1);
});
