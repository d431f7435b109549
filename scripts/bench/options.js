'use strict';
// Command-line flags and BENCH_* environment variables of `npm run bench`.
// A flag wins over its environment variable, which wins over the default.
const minimist = require('minimist');

const DEFAULTS = {
  duration: 5, // seconds per measured run
  runs: 3, // measured runs per server and scenario; the median is reported
  warmup: 2, // seconds of unmeasured load before the measured runs
  connections: 32,
  threads: 1, // wrk threads; the load generator shares the machine with the server
  workers: 0, // svr and bare-cluster workers; 0 = os.availableParallelism()
  only: '', // comma-separated scenario names; empty = all
  servers: '', // comma-separated server names; empty = all
  out: '', // JSON results file; empty = .bench/results-<date>.json
  keep: false, // keep the temp dir (files, configs, logs) for inspection
  install: true, // apt-get/npm install what is missing
  svr: '', // svr.js to benchmark; empty = the one in this checkout
  svrjs: '', // an SVR.JS directory (with svr.js) for the blog rows; empty = SVR.JS left out
  throughput: true, // the requests/s rows; --no-throughput leaves only the CPU-per-request rows
  'cpu-per-request': true, // the CPU-per-request rows (one worker pinned, the load tool on another core)
  node: '', // comma-separated Node versions for the CPU-per-request rows of svr and the node ceiling; empty = the running Node
  docs: 'auto', // write docs/performance-latest.md and docs/performance.svg: auto = after a complete run
};

const SCENARIO_NAMES = [
  'html-1k', 'js-100k', 'bin-4m', 'revalidate-304', 'dir-1000', 'compressed-100k', 'precompressed-100k', 'gzip-100k', 'cpu',
  'blog-c5', 'blog-c5-busy', 'blog-c32', 'blog-c32-busy', 'blog-ab-c5', 'tls-html-1k', 'h2-html-1k', 'tls-new-conn', 'tls-resumed-conn',
  'proxy-1k', 'ssjs-hello', 'blog-fib', // CPU per request only
];
const SERVER_NAMES = ['nginx', 'serve', 'http-server', 'node-ceiling', 'svr', 'svr-single', 'bare-cluster', 'svr-none', 'svr-rr', 'bare-cluster-none', 'bare-cluster-rr', 'pm2', 'svrjs'];

const USAGE = `Usage: npm run bench -- [options]
  --duration S       seconds per measured run (default ${DEFAULTS.duration})
  --runs N           measured runs per cell, median reported (default ${DEFAULTS.runs})
  --warmup S         seconds of unmeasured warm-up per cell; in the CPU rows, per round (default ${DEFAULTS.warmup})
  --connections N    wrk connections (default ${DEFAULTS.connections})
  --threads N        wrk threads (default ${DEFAULTS.threads})
  --workers N        svr and bare-cluster workers (default: available cores)
  --only a,b         scenarios to run (default: all), of:
                       ${SCENARIO_NAMES.slice(0, 9).join(' ')}
                       ${SCENARIO_NAMES.slice(9, 17).join(' ')}
                       ${SCENARIO_NAMES.slice(17).join(' ')}
  --servers a,b      servers to run (default: all), of:
                       ${SERVER_NAMES.join(' ')}
  --out FILE         JSON results file (default .bench/results-<date>.json)
  --keep             keep the temp dir with files, configs and logs
  --no-install       do not apt-get/npm install missing tools; skip what is missing
  --svr PATH         the svr.js to benchmark (default: svr.js of this checkout)
  --svrjs DIR        an unpacked SVR.JS (DIR/svr.js) to run in the blog rows beside svr and PM2
  --no-throughput    leave out the requests/s rows (only CPU per request)
  --no-cpu-per-request  leave out the CPU-per-request rows (one worker pinned to core 0, the load
                     tool to core 1; scenarios html-1k revalidate-304 js-100k proxy-1k ssjs-hello
                     blog-fib h2-html-1k, those of --only among them)
  --node 20,22,24    the Node versions svr and the node ceiling run under in the CPU-per-request
                     rows (default: the running Node; others installed once from npm's node package)
  --docs, --no-docs  write docs/performance-latest.md and docs/performance.svg from the results
                     (default: only after a complete run, without --only and --servers)
Each option can also be set as BENCH_<NAME> in the environment, e.g. BENCH_DURATION=10.`;

function envValue(name) {
  const value = process.env['BENCH_' + name.toUpperCase().replace(/-/g, '_')];
  return value === undefined || value === '' ? undefined : value;
}

function toBoolean(value) {
  return value === true || value === 'true' || value === '1' || value === 'yes';
}

function toList(value) {
  return String(value || '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

function positiveNumber(name, value) {
  const number = Number(value);
  if (!Number.isFinite(number) || number < 0) throw new Error(`--${name}: expected a number >= 0, got "${value}"`);
  return number;
}

function toDocs(value) {
  if (value === undefined || value === 'auto') return 'auto';
  return value === '' || toBoolean(value);
}

function parseOptions(argv) {
  const args = minimist(argv, {
    string: ['only', 'servers', 'out', 'svr', 'svrjs', 'node'],
    boolean: ['keep', 'install', 'help', 'cpu-per-request', 'throughput'],
    alias: { h: 'help' },
  });
  const unknown = Object.keys(args).filter((name) => name !== '_' && name !== 'h' && name !== 'help' && !(name in DEFAULTS));
  if (unknown.length) throw new Error(`unknown option --${unknown[0]}\n${USAGE}`);
  if (args._.length) throw new Error(`unexpected argument ${args._[0]}\n${USAGE}`);
  if (args.help) return { help: true, usage: USAGE };
  const given = (name) => argv.some((arg) => new RegExp(`^--(no-)?${name}(=|$)`).test(arg));
  const pick = (name) => (given(name) ? args[name] : envValue(name) !== undefined ? envValue(name) : DEFAULTS[name]);
  return {
    duration: positiveNumber('duration', pick('duration')),
    runs: Math.max(1, Math.round(positiveNumber('runs', pick('runs')))),
    warmup: positiveNumber('warmup', pick('warmup')),
    connections: Math.max(1, Math.round(positiveNumber('connections', pick('connections')))),
    threads: Math.max(1, Math.round(positiveNumber('threads', pick('threads')))),
    workers: Math.round(positiveNumber('workers', pick('workers'))),
    only: toList(pick('only')),
    servers: toList(pick('servers')),
    out: pick('out'),
    keep: toBoolean(pick('keep')),
    install: toBoolean(pick('install')),
    svr: pick('svr'),
    svrjs: pick('svrjs'),
    throughput: toBoolean(pick('throughput')),
    cpuPerRequest: toBoolean(pick('cpu-per-request')),
    node: toList(pick('node')),
    docs: toDocs(pick('docs')),
  };
}

module.exports = { parseOptions, USAGE, SCENARIO_NAMES, SERVER_NAMES };
