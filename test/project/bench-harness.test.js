'use strict';
// The benchmark's own arithmetic and parsing (the benchmark itself is `npm run bench`, not a test).
const test = require('node:test');
const assert = require('node:assert/strict');
const { parseReport } = require('../../scripts/bench/wrk');
const { median, summariseRuns, computeRatios, computeBlogRatios } = require('../../scripts/bench/report');
const { parseOptions, SCENARIO_NAMES, SERVER_NAMES } = require('../../scripts/bench/options');
const { parseH2load } = require('../../scripts/bench/h2load');
const { parseSTime, combineClients, sTimeArgs } = require('../../scripts/bench/s-time');
const { chartBars, renderChart, axisRange } = require('../../scripts/bench/chart');
const { replaceBetweenMarkers, shouldWrite, START_MARKER, END_MARKER } = require('../../scripts/bench/docs');
const { isDirty, measuredCommit } = require('../../scripts/bench/commit');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { scenarios } = require('../../scripts/bench/scenarios');
const { SERVERS, svrConfig } = require('../../scripts/bench/servers');
const { FIB_EXPECTED_BODY, compileFibHandler } = require('../../scripts/bench/fib-work');

const WRK_OUTPUT = `Running 5s test @ http://127.0.0.1:1234/x
  1 threads and 32 connections
  Non-2xx or 3xx responses: 7
Requests/sec:  10000.00
WRKJSON {"requests":50000,"duration_us":5000000,"bytes":51200000,"errors":{"connect":0,"read":2,"write":0,"status":7,"timeout":1},"latency_us":{"mean":1500.5,"p50":1200,"p90":2500,"p99":4321,"max":9000}}
`;

test('a wrk report gives requests/s, p99 in ms and every kind of error summed', () => {
  const report = parseReport(WRK_OUTPUT);
  assert.equal(report.rps, 10000);
  assert.equal(report.latencyMs.p99, 4.321);
  assert.equal(report.errors, 10);
  assert.equal(report.errorDetail.status, 7);
});

test('wrk output without the report line is no report', () => {
  assert.equal(parseReport('Running 5s test\nunable to connect\n'), null);
});

test('median of an odd and an even count, failed runs left out of the summary', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  const runs = [{ failure: 'wrk exited 1' }, parseReport(WRK_OUTPUT)];
  assert.equal(summariseRuns(runs).rps, 10000);
  assert.equal(summariseRuns([{ failure: 'x' }]), null);
});

test('a ratio needs both cells measured, checked ok and nearly free of errors', () => {
  const cell = (server, rps, extra = {}) => ({ scenario: 's', server, check: 'ok', runs: [], median: { rps, requests: 1000, errors: 0 }, ...extra });
  const ratioOf = (svr, peer) => computeRatios([svr, peer], ['s'])[0].ratios['svr/nginx'];
  assert.equal(ratioOf(cell('svr', 500), cell('nginx', 1000)), 0.5);
  assert.equal(ratioOf(cell('svr', 500, { check: 'got 404' }), cell('nginx', 1000)), null);
  assert.equal(ratioOf(cell('svr', 500, { median: { rps: 500, requests: 1000, errors: 50 } }), cell('nginx', 1000)), null);
  assert.equal(ratioOf(cell('svr', 500, { median: undefined }), cell('nginx', 1000)), undefined);
});

test('the per-round range pairs runs of the same round', () => {
  const runs = (...rates) => rates.map((rps, i) => ({ round: i + 1, rps }));
  const svr = { scenario: 's', server: 'svr', check: 'ok', runs: runs(100, 300, 200), median: { rps: 200, requests: 1000, errors: 0 } };
  const nginx = { scenario: 's', server: 'nginx', check: 'ok', runs: runs(400, 400, 1000), median: { rps: 400, requests: 1000, errors: 0 } };
  const [row] = computeRatios([svr, nginx], ['s']);
  assert.equal(row.ratios['svr/nginx'], 0.5);
  assert.deepEqual(row.perRoundRange['svr/nginx'], [0.2, 0.75]);
});

test('options come from flags, then BENCH_* variables, then defaults; unknown flags are refused', () => {
  process.env.BENCH_RUNS = '5';
  try {
    const options = parseOptions(['--duration', '2', '--only', 'html-1k,cpu', '--no-install']);
    assert.equal(options.duration, 2);
    assert.equal(options.runs, 5);
    assert.deepEqual(options.only, ['html-1k', 'cpu']);
    assert.equal(options.install, false);
    assert.equal(parseOptions(['--runs=1']).runs, 1);
  } finally {
    delete process.env.BENCH_RUNS;
  }
  assert.throws(() => parseOptions(['--durration', '2']), /unknown option --durration/);
});

const H2LOAD_OUTPUT = `finished in 5.00s, 12103.50 req/s, 12.63MB/s
requests: 60518 total, 60522 started, 60518 done, 60510 succeeded, 8 failed, 1 errored, 2 timeout
status codes: 60510 2xx, 0 3xx, 3 4xx, 4 5xx
traffic: 25.26MB (26483174) total, 1017.11KB (1041521) headers (space savings 83.06%), 23.64MB (24787968) data
                     min         max         mean         sd        +/- sd
time for request:       44us     31.16ms       308us       688us    93.89%
`;

test('an h2load report gives requests/s, mean and max latency in ms, and failures plus 4xx/5xx as errors', () => {
  const report = parseH2load(H2LOAD_OUTPUT);
  assert.equal(report.rps, 12103.5);
  assert.equal(report.requests, 60518);
  assert.equal(report.errors, 8 + 1 + 2 + 3 + 4);
  assert.equal(report.latencyMs.mean, 0.308);
  assert.equal(report.latencyMs.max, 31.16);
  assert.equal(report.latencyMs.p99, null);
  assert.equal(Math.round(report.bytesPerSecond), Math.round(26483174 / 5));
  assert.equal(parseH2load('connect: Connection refused\n'), null);
});

test('the blog table pairs svr and the bare cluster under the same policy, and svr none against bare rr', () => {
  const cell = (server, rps) => ({ scenario: 'blog-c5-busy', server, connections: 5, check: 'ok', runs: [], median: { rps, requests: 1000, errors: 0 } });
  const [row] = computeBlogRatios([cell('svr-none', 90), cell('svr-rr', 80), cell('bare-cluster-none', 100), cell('bare-cluster-rr', 120), cell('nginx', 5)]);
  assert.equal(row.busy, true);
  assert.equal(row.connections, 5);
  assert.equal(row.ratios['svr/bare-cluster (none)'], 0.9);
  assert.equal(row.ratios['svr/bare-cluster (rr)'], 80 / 120);
  assert.equal(row.ratios['svr none/bare-cluster rr'], 0.75);
  assert.equal(row.ratios['svr rr/svr none'], 80 / 90);
  const [missing] = computeBlogRatios([cell('svr-none', 90)]);
  assert.equal(missing.ratios['svr/bare-cluster (none)'], null);
});

test('the chart has one bar per finite ratio, a log axis around 1x, and escapes its text', () => {
  const results = {
    ratios: [{ scenario: 'html-1k', ratios: { 'svr/nginx': 0.5, 'svr/serve': 8, 'svr/http-server': null } }],
    blog: [{ scenario: 'blog-c5', ratios: { 'svr/bare-cluster (none)': 0.97, 'svr rr/svr none': undefined } }],
  };
  const bars = chartBars(results);
  assert.deepEqual(bars.map((bar) => bar.label), ['html-1k · svr/nginx', 'html-1k · svr/serve', 'blog-c5 · svr/bare-cluster (none)']);
  assert.deepEqual(axisRange(bars), { min: 0.5, max: 10, ticks: [0.5, 1, 2, 5, 10] });
  const svg = renderChart(bars, { title: 'a <b> & c', subtitle: 'x' });
  assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.match(svg, /<\/svg>\n$/);
  assert.equal((svg.match(/<rect /g) || []).length, 1 + bars.length); // background + bars
  assert.match(svg, /a &lt;b&gt; &amp; c/);
  // 0.5x and 2x would be bars of the same length either side of 1x: here 0.5x reaches the axis start
  const bar = svg.match(/<rect x="([\d.]+)" y="\d+" width="([\d.]+)"/);
  assert.equal(Number(bar[1]), 300);
});

test('the generated block replaces what is between the markers and keeps the rest of the page', () => {
  const page = `# Title\n\nintro\n\n${START_MARKER}\nold table\n${END_MARKER}\n\nafter\n`;
  const updated = replaceBetweenMarkers(page, 'new table');
  assert.equal(updated, `# Title\n\nintro\n\n${START_MARKER}\nnew table\n${END_MARKER}\n\nafter\n`);
  assert.equal(replaceBetweenMarkers(updated, 'third'), updated.replace('new table', 'third'));
  assert.equal(replaceBetweenMarkers('# Page', 'x'), `# Page\n\n${START_MARKER}\nx\n${END_MARKER}\n`);
});

test('docs are written after a complete run, or when asked, never with --no-docs', () => {
  assert.equal(shouldWrite(parseOptions([])), true);
  assert.equal(shouldWrite(parseOptions(['--only', 'html-1k'])), false);
  assert.equal(shouldWrite(parseOptions(['--only', 'html-1k', '--docs'])), true);
  assert.equal(shouldWrite(parseOptions(['--no-docs'])), false);
});

test("a checkout is dirty when a tracked file changed, but not for the bench's own outputs", () => {
  assert.equal(isDirty(''), false);
  assert.equal(isDirty(' M docs/performance-latest.md\n M docs/performance.svg\n'), false);
  let head = null;
  try {
    head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: __dirname, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    // not a git checkout (e.g. an unpacked tarball): the bench says "unknown"
  }
  assert.equal(measuredCommit(path.join(__dirname, '..', '..')).hash, head);
  assert.equal(isDirty(' M docs/performance.svg\nM  lib/static.js\n'), true);
});

test('the help lists every scenario and server the bench has', () => {
  const fixtures = { sizes: { html: 1024, js: 102400, bin: 4194304 }, dirEntries: 1000 };
  const { CPU_SCENARIO_NAMES } = require('../../scripts/bench/cpu-per-request');
  const throughput = scenarios(fixtures).map((scenario) => scenario.name);
  assert.deepEqual([...throughput, ...CPU_SCENARIO_NAMES.filter((name) => !throughput.includes(name))], SCENARIO_NAMES);
  assert.deepEqual([...SERVERS.map((server) => server.name)].sort(), [...SERVER_NAMES].sort());
});

test('the blog handler computes fib(20000) for /fibonacci and refuses a bad n', () => {
  const handler = compileFibHandler();
  const answer = (url) => {
    const res = { status: 0, body: '', writeHead(status) { this.status = status; }, end(body) { this.body = String(body); } };
    handler({ url }, res);
    return res;
  };
  const ok = answer('/fibonacci?n=20000');
  assert.equal(ok.status, 200);
  assert.equal(ok.body, FIB_EXPECTED_BODY);
  assert.equal(FIB_EXPECTED_BODY.length, 4180);
  assert.equal(answer('/fibonacci?n=10').body, '55');
  assert.equal(answer('/fibonacci?n=-1').status, 400);
  assert.equal(answer('/other').status, 404);
});

test('openssl s_time clients: full handshakes only, their connections summed over the wall-clock time', () => {
  assert.deepEqual(sTimeArgs({ url: 'https://127.0.0.1:8443/bench-1k.html', seconds: 2.5 }).slice(0, 6), ['s_time', '-connect', '127.0.0.1:8443', '-new', '-tls1_3', '-www']);
  assert.equal(sTimeArgs({ url: 'https://127.0.0.1:8443/x', seconds: 0.2 }).at(-1), '1');
  const line = '371 connections in 3 real seconds, 1258 bytes read per connection\n';
  assert.deepEqual(parseSTime(`Collecting connection statistics for 2 seconds\n***\n\n${line}`), { connections: 371, bytesPerConnection: 1258 });
  assert.equal(parseSTime('connect: Connection refused\n'), null);
  const clients = [{ connections: 300, bytesPerConnection: 1258 }, { connections: 100, bytesPerConnection: 1258 }, { failure: 'openssl s_time exited 1' }];
  const run = combineClients(clients, 2, 1024);
  assert.equal(run.requests, 400);
  assert.equal(run.rps, 200);
  assert.equal(run.errors, 1);
  assert.equal(combineClients([{ connections: 10, bytesPerConnection: 200 }], 1, 1024).errors, 1); // answers shorter than the page
  assert.equal(combineClients([{ failure: 'x' }], 1, 1024).failure, 'x');
});

test('CPU per request: svr over each peer of the same scenario and Node version, n/c when a side failed its check', () => {
  const { cpuRatios, summarise } = require('../../scripts/bench/cpu-per-request');
  const row = (server, nodeVersion, usPerRequest, check = 'ok') => summarise({
    scenario: 'html-1k', server, nodeVersion, label: server, check,
    runs: [1, 2, 3].map((round) => ({ round, requests: 1000, rps: 1000, errors: 0, cpuUsPerRequest: usPerRequest * (round === 2 ? 1 : round === 1 ? 0.9 : 1.2) })),
  });
  const rows = [row('nginx', null, 10), row('node-ceiling', '22.1.0', 16), row('node-ceiling', '24.1.0', 8), row('svr', '22.1.0', 20), row('svr', '24.1.0', 12, 'got 404')];
  assert.equal(rows[0].cpuUsPerRequest, 10);
  assert.deepEqual(rows[0].range, [9, 12]);
  const ratios = cpuRatios(rows);
  assert.deepEqual(ratios.map((r) => r.nodeVersion), ['22.1.0', '24.1.0']);
  assert.equal(ratios[0].peers['svr/nginx'], 2);
  assert.equal(ratios[0].peers['svr/node-ceiling'], 20 / 16, 'the node ceiling under the same Node version');
  assert.equal(ratios[1].peers['svr/nginx'], null, 'a failed check gives no ratio');
  assert.equal(summarise({ scenario: 's', server: 'svr', runs: [{ failure: 'wrk exited 1' }] }).failure, 'wrk exited 1');
});

test('CPU per request: one row per Node version for svr and the node ceiling, one for nginx; --only picks its scenarios', () => {
  const { serverVariants, cpuScenariosFor, CPU_SCENARIO_NAMES } = require('../../scripts/bench/cpu-per-request');
  const nodes = [{ binary: '/a/node', version: '22.1.0' }, { binary: '/b/node', version: '24.1.0' }];
  assert.deepEqual(serverVariants([], nodes).map((v) => `${v.server}@${v.nodeVersion}`), ['nginx@null', 'node-ceiling@22.1.0', 'node-ceiling@24.1.0', 'svr@22.1.0', 'svr@24.1.0']);
  assert.deepEqual(serverVariants(['svr'], nodes).map((v) => v.node), ['/a/node', '/b/node']);
  assert.deepEqual(CPU_SCENARIO_NAMES, ['html-1k', 'revalidate-304', 'js-100k', 'proxy-1k', 'ssjs-hello', 'blog-fib', 'tls-html-1k', 'h2-html-1k']);
  for (const name of ['tls-html-1k', 'h2-html-1k']) assert.deepEqual(cpuScenariosFor([name])[0].servers, ['nginx', 'node-ceiling', 'svr'], `${name} has a node ceiling`);
  assert.equal(cpuScenariosFor(['tls-html-1k'])[0].tool, undefined, 'tls-html-1k runs wrk over HTTPS');
  assert.equal(cpuScenariosFor(['h2-html-1k'])[0].tool, 'h2load');
  assert.deepEqual(cpuScenariosFor(['cpu', 'proxy-1k']).map((s) => s.name), ['proxy-1k']);
  assert.equal(cpuScenariosFor([]).length, CPU_SCENARIO_NAMES.length);
  const options = parseOptions(['--node', '20,24', '--no-cpu-per-request']);
  assert.deepEqual(options.node, ['20', '24']);
  assert.equal(options.cpuPerRequest, false);
  assert.equal(parseOptions([]).cpuPerRequest, true);
});

test('CPU per request: blog-fib sets svr against the bare cluster running the same script, over the blog\'s 5 connections', () => {
  const { cpuScenariosFor, commandFor, CONNECTIONS, BLOG_CONNECTIONS } = require('../../scripts/bench/cpu-per-request');
  const [blog] = cpuScenariosFor(['blog-fib']);
  assert.equal(blog.site, 'blog');
  assert.equal(blog.path, '/fibonacci?n=20000');
  assert.deepEqual(blog.servers, ['node-ceiling', 'svr']);
  assert.equal(blog.connections, BLOG_CONNECTIONS);
  assert.equal(BLOG_CONNECTIONS, 5);
  assert.equal(cpuScenariosFor(['ssjs-hello'])[0].connections, undefined, `the other rows keep ${CONNECTIONS}`);
  assert.equal(blog.expect({ status: 200, body: Buffer.from(FIB_EXPECTED_BODY) }), true);
  assert.equal(blog.expect({ status: 200, body: Buffer.from('55') }), false);
  const ceiling = commandFor({ server: 'node-ceiling', site: 'blog', node: '/x/node', port: 1234, fixtures: { sites: { blog: '/tmp/blog' } } });
  assert.equal(ceiling.command, '/x/node');
  assert.match(ceiling.args[0], /bare-cluster\.js$/);
  assert.deepEqual(ceiling.args.slice(-4), ['--workers', '1', '--workload', 'fib']);
});

test('CPU per request: the load tool is run through taskset on its core; a process tree\'s CPU time grows as it works', () => {
  const { pinned, treeCpuSeconds, processTree } = require('../../scripts/bench/pinning');
  assert.deepEqual(pinned({ taskset: '/usr/bin/taskset', core: 1 }, 'wrk', ['-c', '16']), ['/usr/bin/taskset', ['-c', '1', 'wrk', '-c', '16']]);
  assert.deepEqual(pinned(undefined, 'wrk', ['x']), ['wrk', ['x']]);
  const before = treeCpuSeconds(process.pid);
  const until = process.cpuUsage().user + 60000;
  while (process.cpuUsage().user < until); // 60 ms of CPU
  assert.ok(treeCpuSeconds(process.pid) - before >= 0.03, 'counted from /proc/PID/stat');
  assert.ok(processTree(process.ppid).includes(process.pid));
});

test('CPU per request: each round measures a fresh process of the server, stopped after its run', { timeout: 30000 }, async (t) => {
  const fs = require('node:fs');
  const os = require('node:os');
  const { measureCpuPerRequest } = require('../../scripts/bench/cpu-per-request');
  const { availableCores } = require('../../scripts/bench/servers');
  if (availableCores() < 2) return t.skip('one core: the CPU section does not run');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-fresh-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const site = path.join(root, 'static');
  fs.mkdirSync(site);
  fs.writeFileSync(path.join(site, 'bench-1k.html'), Buffer.alloc(1024, 'a'));
  // Stand-ins for taskset (runs the command unpinned) and wrk (a fixed report, no load).
  const taskset = path.join(root, 'taskset');
  fs.writeFileSync(taskset, '#!/bin/sh\nshift 2\nexec "$@"\n', { mode: 0o755 });
  const wrk = path.join(root, 'wrk');
  const report = { requests: 1000, duration_us: 100000, bytes: 1024000, errors: { connect: 0, read: 0, write: 0, status: 0, timeout: 0 }, latency_us: { mean: 1, p50: 1, p90: 1, p99: 1, max: 1 } };
  fs.writeFileSync(wrk, `#!/bin/sh\necho 'WRKJSON ${JSON.stringify(report)}'\n`, { mode: 0o755 });
  const options = { only: ['html-1k'], servers: ['node-ceiling'], node: [], runs: 2, duration: 0.1, warmup: 0.1, cpuPerRequest: true };
  const context = { options, tools: { taskset, wrk }, fixtures: { root, sites: { static: site }, sizes: { html: 1024 } }, log: () => {} };
  const section = await measureCpuPerRequest(context);
  const [row] = section.rows;
  assert.equal(row.check, 'ok');
  assert.equal(row.runs.length, 2);
  const pids = row.runs.map((run) => run.pid);
  assert.notEqual(pids[0], pids[1], 'a process per round');
  for (const pid of pids) assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' }, `process ${pid} stopped`);
});

test('the CPU-per-request table prints µs per request, the rounds, and svr over its peers', () => {
  const { cpuSection } = require('../../scripts/bench/report');
  const section = {
    connections: 16,
    rows: [
      { scenario: 'html-1k', server: 'nginx', nodeVersion: null, check: 'ok', cpuUsPerRequest: 17.2, range: [16.9, 17.6], rps: 58000, errors: 0 },
      { scenario: 'html-1k', server: 'svr', nodeVersion: '24.1.0', check: 'ok', cpuUsPerRequest: 21.5, range: [21, 22], rps: 45000, errors: 0 },
    ],
    ratios: [{ scenario: 'html-1k', nodeVersion: '24.1.0', peers: { 'svr/nginx': 21.5 / 17.2 } }],
  };
  const text = cpuSection(section).join('\n');
  assert.match(text, /\| html-1k \| svr \| 24\.1\.0 \| 21\.5 \| 21\.0–22\.0 \| 45,000 \| 0 \| 1\.25× \|/);
  assert.match(text, /\| html-1k \| nginx \| – \| 17\.2 \|/);
  assert.deepEqual(cpuSection(null), []);
  assert.match(cpuSection({ skipped: 'one core' }).join('\n'), /not measured \(one core\)/);
});

// Rounds as the complete run of 2026-11-28 06:46 measured them (docs/performance.md): nginx's
// revalidate-304 rounds (steady) and its tls-html-1k rounds (the machine changed speed).
const STEADY_ROUNDS = [20.5, 18.3, 21.2, 21.4, 21.8];
const UNSTEADY_ROUNDS = [27.9, 43.2, 44.0, 40.0, 25.8];
const cpuRow = (server, nodeVersion, rounds) => ({ scenario: 'html-1k', server, nodeVersion, check: 'ok', cpuUsPerRequest: rounds[2], range: [Math.min(...rounds), Math.max(...rounds)], rps: 1000, errors: 0, runs: rounds.map((cpuUsPerRequest) => ({ cpuUsPerRequest })) });

test('a CPU row whose middle rounds differ by more than 1.2x is noted as unsteady, in its row and in the targets built on it', () => {
  const { unsteadyNote, cpuSection } = require('../../scripts/bench/report');
  const { checkTargets } = require('../../scripts/bench/targets');
  assert.equal(unsteadyNote(cpuRow('nginx', null, STEADY_ROUNDS)), '');
  assert.equal(unsteadyNote(cpuRow('nginx', null, UNSTEADY_ROUNDS)), 'unsteady: middle rounds 27.9–43.2 µs');
  assert.equal(unsteadyNote(cpuRow('nginx', null, UNSTEADY_ROUNDS.slice(0, 3))), '', 'three rounds have no middle to judge');
  const section = {
    connections: 16,
    rows: [cpuRow('nginx', null, UNSTEADY_ROUNDS), cpuRow('node-ceiling', '22.0.0', STEADY_ROUNDS), cpuRow('svr', '22.0.0', STEADY_ROUNDS)],
    ratios: [{ scenario: 'html-1k', nodeVersion: '22.0.0', peers: { 'svr/nginx': 1.1, 'svr/node-ceiling': 1.2 } }],
  };
  const text = cpuSection(section).join('\n');
  assert.match(text, /\| html-1k \| nginx \|.*\| unsteady: middle rounds 27\.9–43\.2 µs \|/);
  assert.match(text, /\| html-1k \| svr \| 22\.0\.0 \|.*\| 1\.20× \| +\|$/m, 'a steady row has no note');
  const targets = checkTargets({ cpuPerRequest: section });
  assert.equal(targets.find((row) => row.label === 'html-1k CPU per request ≤ 1.25× nginx').text, '1.10× (Node 22.0.0, unsteady rounds)');
  assert.equal(targets.find((row) => row.label === 'html-1k CPU per request ≤ 1.3× the node ceiling').text, '1.20× (Node 22.0.0)');
});

test('npm run bench -- render FILE rewrites performance-latest.md and the chart from a results JSON, measuring nothing', () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const { spawnSync } = require('node:child_process');
  // A copy of scripts/, so that the docs it writes (beside its parent) are not the repository's.
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-render-'));
  try {
    fs.cpSync(path.join(__dirname, '..', '..', 'scripts'), path.join(root, 'scripts'), { recursive: true });
    fs.symlinkSync(path.join(__dirname, '..', '..', 'node_modules'), path.join(root, 'node_modules'));
    const results = {
      meta: { date: '2026-11-28T06:46:00.000Z', commit: 'abc1234', machine: { cpuModel: 'c', nproc: 2, kernel: 'Linux 6' }, options: { runs: 5, duration: 4, warmup: 2, threads: 1, connections: 32 }, workers: 2 },
      cells: [], ratios: [], instances: [],
      cpuPerRequest: { connections: 16, rows: [cpuRow('nginx', null, UNSTEADY_ROUNDS)], ratios: [] },
    };
    const file = path.join(root, 'results.json');
    fs.writeFileSync(file, JSON.stringify(results));
    const bench = path.join(root, 'scripts', 'bench.js');
    const run = spawnSync(process.execPath, [bench, 'render', file], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    const page = fs.readFileSync(path.join(root, 'docs', 'performance-latest.md'), 'utf8');
    assert.ok(page.includes(START_MARKER));
    assert.match(page, /\| html-1k \| nginx \|.*\| unsteady: middle rounds 27\.9–43\.2 µs \|/);
    assert.ok(fs.statSync(path.join(root, 'docs', 'performance.svg')).size > 0, 'the chart');
    const usage = spawnSync(process.execPath, [bench, 'render'], { encoding: 'utf8' });
    assert.equal(usage.status, 1);
    assert.match(usage.stderr + usage.stdout, /usage: npm run bench -- render RESULTS\.json/);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test("ab's report (the blog's method) gives requests/s, percentiles in ms, and failed plus non-2xx as errors; -n follows -t", () => {
  const { parseAb, abArgs } = require('../../scripts/bench/ab');
  const AB_OUTPUT = `Concurrency Level:      5
Time taken for tests:   10.002 seconds
Complete requests:      8123
Failed requests:        3
Non-2xx responses:      2
Total transferred:      35000000 bytes
Requests per second:    812.14 [#/sec] (mean)
Time per request:       6.157 [ms] (mean)
Percentage of the requests served within a certain time (ms)
  50%      6
  99%     11
 100%     40 (longest request)
`;
  const report = parseAb(AB_OUTPUT);
  assert.equal(report.requests, 8123);
  assert.equal(report.rps, 812.14);
  assert.equal(report.errors, 5);
  assert.equal(report.latencyMs.p99, 11);
  assert.equal(report.latencyMs.max, 40);
  assert.equal(Math.round(report.bytesPerSecond), Math.round(35000000 / 10.002));
  assert.equal(parseAb('apr_socket_recv: Connection refused (111)\n'), null);
  const args = abArgs({ url: 'http://127.0.0.1:1/f', seconds: 10, connections: 5 });
  assert.ok(args.indexOf('-n') > args.indexOf('-t'), 'ab -t alone would stop at 50,000 requests');
  assert.deepEqual(args.slice(args.indexOf('-c'), args.indexOf('-c') + 2), ['-c', '5']);
});

test('the blog table compares svr with PM2 and SVR.JS when they ran, and leaves their columns out otherwise', () => {
  const { blogTable } = require('../../scripts/bench/report');
  const cell = (server, rps) => ({ scenario: 'blog-ab-c5', server, connections: 5, check: 'ok', runs: [], median: { rps, requests: 1000, errors: 0 } });
  const [row] = computeBlogRatios([cell('svr-none', 99), cell('bare-cluster-rr', 100), cell('pm2', 90), cell('svrjs', 110)]);
  assert.equal(row.ratios['svr none/pm2'], 1.1);
  assert.equal(row.ratios['svr none/svrjs'], 0.9);
  assert.match(blogTable([row]), /pm2 req\/s \| svrjs req\/s/);
  const [without] = computeBlogRatios([cell('svr-none', 99), cell('bare-cluster-rr', 100)]);
  assert.doesNotMatch(blogTable([without]), /pm2|svrjs/);
});

test('SVR.JS runs from a copy of the directory given, its config.json keeping its keys with port and web root set', () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const { svrjsCommand, pm2Command } = require('../../scripts/bench/servers');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-bench-svrjs-'));
  try {
    const install = path.join(dir, 'install');
    fs.mkdirSync(path.join(install, 'log'), { recursive: true });
    fs.writeFileSync(path.join(install, 'svr.js'), '// SVR.JS');
    fs.writeFileSync(path.join(install, 'log', 'old.log'), 'x');
    fs.writeFileSync(path.join(install, 'config.json'), JSON.stringify({ port: 80, stackHidden: false, enableLogging: false }));
    const work = path.join(dir, 'work');
    fs.mkdirSync(work);
    const spec = svrjsCommand({ options: { svrjs: install }, port: 8123, workDir: work, wwwroot: '/srv/blog' });
    assert.equal(spec.args[0], path.join(work, 'svrjs', 'svr.js'));
    assert.equal(spec.cwd, path.join(work, 'svrjs'));
    assert.deepEqual(JSON.parse(fs.readFileSync(path.join(work, 'svrjs', 'config.json'), 'utf8')), { port: 8123, pubport: 8123, stackHidden: false, enableLogging: true, wwwroot: '/srv/blog', useWebRootServerSideScript: true });
    assert.equal(fs.existsSync(path.join(work, 'svrjs', 'log')), false, 'not its old logs');
    assert.equal(JSON.parse(fs.readFileSync(path.join(install, 'config.json'), 'utf8')).port, 80, 'the directory given is left as it was');
    const pm2 = pm2Command({ tools: { pm2Runtime: '/x/pm2-runtime' }, port: 8124, workDir: work, workers: 2 });
    assert.deepEqual(pm2.args.slice(0, 2), ['/x/pm2-runtime', 'start']);
    assert.equal(pm2.args[pm2.args.indexOf('-i') + 1], '2');
    assert.equal(pm2.env.PM2_HOME, path.join(work, 'pm2'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// The TLS node ceiling is only a ceiling if it answers what svr answers, over the same TLS: the
// bench's certificate, TLS 1.3, HTTP/2 by ALPN and HTTP/1.1 without, and svr's header names; and
// over HTTP/2 in the frames svr sends (HEADERS, then the body in one DATA frame ending the stream:
// Node's compatibility API would add an empty DATA frame, which svr does not send).
test('CPU per request: the HTTPS / HTTP/2 node ceiling runs on svr\'s certificate and answers with svr\'s headers', { timeout: 60000 }, async (t) => {
  const fs = require('node:fs');
  const os = require('node:os');
  const { commandFor } = require('../../scripts/bench/cpu-per-request');
  const { createCertificate } = require('../../scripts/bench/certificate');
  const { freePort, fetchOnce, fetchH2Once, startProcess, stopProcess } = require('../../scripts/bench/processes');
  const openssl = ['/usr/bin/openssl', '/bin/openssl'].find((file) => fs.existsSync(file));
  if (!openssl) return t.skip('openssl not installed (the bench installs it; this test does not)');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-tls-ceiling-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const tlsRoot = path.join(root, 'tls');
  fs.mkdirSync(tlsRoot);
  fs.writeFileSync(path.join(tlsRoot, 'bench-1k.html'), Buffer.alloc(1024, 'a'));
  const fixtures = { root, sites: { tls: tlsRoot }, certificate: createCertificate(openssl, path.join(root, 'cert')) };
  const answers = {};
  for (const server of ['node-ceiling', 'svr']) {
    const workDir = fs.mkdtempSync(path.join(root, `${server}-`));
    const port = await freePort();
    const spec = commandFor({ server, site: 'tls', node: process.execPath, port, workDir, tools: {}, fixtures, options: {} });
    if (server === 'node-ceiling') assert.ok(spec.args.includes(fixtures.certificate.cert) && spec.args.includes(fixtures.certificate.key), "given svr's certificate");
    const url = `https://127.0.0.1:${port}/bench-1k.html`;
    const started = await startProcess({ ...spec, logFile: path.join(workDir, 'output.log'), readyUrl: url });
    t.after(() => stopProcess(started.proc));
    answers[server] = { h1: await fetchOnce(url), h2: await fetchH2Once(url), h2Frames: nghttpFrames(url) };
  }
  const names = (res) => Object.keys(res.headers).filter((name) => !name.startsWith(':') && name !== 'connection' && name !== 'keep-alive').sort();
  for (const [server, { h1, h2 }] of Object.entries(answers)) {
    assert.equal(h1.status, 200, server);
    assert.equal(h1.tlsVersion, 'TLSv1.3', `${server}: TLS 1.3`);
    assert.equal(h1.body.length, 1024);
    assert.equal(h2.status, 200, server);
    assert.equal(h2.alpn, 'h2', `${server}: HTTP/2 by ALPN`);
    assert.equal(h2.body.length, 1024);
  }
  assert.deepEqual(names(answers['node-ceiling'].h1), names(answers.svr.h1), 'the same header names over HTTPS');
  assert.deepEqual(names(answers['node-ceiling'].h2), names(answers.svr.h2), 'the same header names over HTTP/2');
  for (const [server, { h2Frames }] of Object.entries(answers)) {
    if (h2Frames === null) continue; // no nghttp: said below
    assert.deepEqual(h2Frames, [['HEADERS', false], ['DATA', true]], `${server}: HEADERS, then one DATA frame ending the stream`);
  }
  if (answers.svr.h2Frames === null) t.diagnostic('nghttp (nghttp2-client) not available: HTTP/2 frames not compared');
});

// The frames of the response to a GET of url, as nghttp -nv prints them: [[type, endStream]], or
// null without nghttp.
function nghttpFrames(url) {
  const { ensureDebianPackage } = require('../support/helpers');
  const nghttp = ensureDebianPackage('nghttp', 'nghttp2-client');
  if (nghttp.skip) return null;
  const stdout = execFileSync(nghttp.path, ['-nv', '-H', 'accept-encoding: identity', url], { encoding: 'utf8', timeout: 10000 });
  // nghttp opens streams of its own for priorities: the request's is the one its HEADERS went on.
  const request = /send HEADERS frame <length=\d+, flags=0x[0-9a-f]+, stream_id=(\d+)>/.exec(stdout);
  if (!request) return [];
  return [...stdout.matchAll(/recv (HEADERS|DATA) frame <length=\d+, flags=0x([0-9a-f]+), stream_id=(\d+)>/g)]
    .filter(([, , , stream]) => stream === request[1])
    .map(([, type, flags]) => [type, (parseInt(flags, 16) & 1) === 1]);
}

// h2load now and then runs on past its -D duration for ever: the bench kills it and goes on.
test('an h2load that outlasts its duration is killed and reported as a failed run', { timeout: 20000 }, async (t) => {
  const fs = require('node:fs');
  const os = require('node:os');
  const { runH2load } = require('../../scripts/bench/h2load');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-h2load-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const stuck = path.join(dir, 'h2load');
  fs.writeFileSync(stuck, '#!/bin/sh\necho $$ > "$(dirname "$0")/pid"\nexec sleep 60\n', { mode: 0o755 });
  const started = Date.now();
  const run = await runH2load({ h2load: stuck, url: 'https://127.0.0.1:1/', headers: {}, seconds: 0.2, threads: 1, connections: 1, graceMs: 300 });
  assert.match(run.failure, /past its 0\.2 s and was killed/);
  assert.ok(Date.now() - started < 5000, 'not waited out');
  const pid = Number(fs.readFileSync(path.join(dir, 'pid'), 'utf8'));
  assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' }, 'the stuck h2load is gone');
});

test('the report says how far svr\'s largest idle worker is over the node ceiling\'s, on the static site', () => {
  const { idleRssOverCeiling, idleRssNote, formatReport } = require('../../scripts/bench/report');
  const record = (server, site, perProcessKiB) => ({ server, site, rssIdle: { processes: perProcessKiB.length, perProcessKiB, primaryKiB: 1 } });
  const instances = [
    record('node-ceiling', 'static', [52224, 51712]),
    record('svr', 'static', [53248, 56320]),
    record('svr', 'cpu', [90000, 90000]), // another site: not compared
  ];
  assert.deepEqual(idleRssOverCeiling(instances), { svrKiB: 56320, ceilingKiB: 52224, overKiB: 4096 });
  assert.deepEqual(idleRssNote(instances), ['Worker RSS idle, svr over the node ceiling (the largest worker of each, static site): +4.0 MiB (svr 55.0, node ceiling 51.0; target ≤ +5 MiB).']);
  assert.match(idleRssNote([record('node-ceiling', 'static', [52224]), record('svr', 'static', [51200])])[0], /: −1\.0 MiB/);
  assert.equal(idleRssOverCeiling(instances.slice(1)), null);
  assert.deepEqual(idleRssNote(instances.slice(1)), []);
  const { renderMarkdown } = require('../../scripts/bench/docs');
  const options = { runs: 1, duration: 1, warmup: 0, threads: 1, connections: 1 };
  const results = { meta: { date: 'd', machine: { cpuModel: 'c', nproc: 2 }, options, workers: 2 }, cells: [], ratios: [], instances };
  assert.match(formatReport(results), /svr over the node ceiling .*: \+4\.0 MiB/);
  assert.match(renderMarkdown(results), /svr over the node ceiling .*: \+4\.0 MiB/);
});

test('the run records the kernel\'s page-table isolation and retpolines, and the docs print whether isolation was on', () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const { kernelMitigations } = require('../../scripts/bench/machine');
  const { renderMarkdown } = require('../../scripts/bench/docs');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-mitigations-'));
  try {
    fs.writeFileSync(path.join(dir, 'meltdown'), 'Mitigation: PTI\n');
    assert.deepEqual(kernelMitigations(dir), { meltdown: 'Mitigation: PTI', spectre_v2: null });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const options = { runs: 1, duration: 1, warmup: 0, threads: 1, connections: 1 };
  const page = (mitigations) => renderMarkdown({ meta: { date: 'd', machine: { cpuModel: 'c', nproc: 2, kernel: 'Linux 6', mitigations }, options, workers: 2 }, cells: [], ratios: [], instances: [] });
  assert.match(page({ meltdown: 'Mitigation: PTI' }), /Linux 6, kernel page-table isolation on \(meltdown: Mitigation: PTI\); load average/);
  assert.match(page({ meltdown: 'Not affected' }), /Linux 6, kernel page-table isolation off \(meltdown: Not affected\); load average/);
  assert.match(page(undefined), /Linux 6; load average/, 'a results file from before the field: the kernel alone');
});

test('the access log target: its costliest format per Node version within 2 µs; left out of runs with --only', () => {
  const { checkTargets } = require('../../scripts/bench/targets');
  const { measureAccessLogCost } = require('../../scripts/bench/access-log-cost');
  const row = (version, combined, json) => ({ nodeVersion: version, formats: { combined: { nsPerRequest: combined, range: [combined, combined] }, json: { nsPerRequest: json, range: [json, json] } } });
  const target = (accessLogCost) => checkTargets({ accessLogCost }).find((entry) => entry.label.startsWith('access log'));
  assert.deepEqual(target({ rows: [row('20.20.2', 950, 1170), row('24.21.0', 870, 1040)] }), { label: target(null).label, text: '0.95 / 1.17 µs (Node 20.20.2); 0.87 / 1.04 µs (Node 24.21.0)', verdict: 'yes' });
  assert.equal(target({ rows: [row('20.20.2', 950, 2063), row('24.21.0', 870, 1040)] }).verdict, '1 of 2');
  assert.equal(target({ rows: [{ nodeVersion: '22.23.3', failure: 'exit 1' }] }).text, 'not measured');
  assert.equal(target(null).text, 'not measured');
  let asked = false;
  const nodes = () => { asked = true; return []; };
  assert.equal(measureAccessLogCost({ options: { cpuPerRequest: true, only: ['html-1k'] }, tools: {}, log: () => {} }, nodes), null);
  assert.equal(measureAccessLogCost({ options: { cpuPerRequest: false, only: [] }, tools: {}, log: () => {} }, nodes), null);
  assert.equal(asked, false, 'no Node version installed for a run that leaves it out');
});

test('the targets table says, per target, what the run measured and whether it holds', () => {
  const { checkTargets, TARGETS } = require('../../scripts/bench/targets');
  const { formatReport } = require('../../scripts/bench/report');
  const { renderMarkdown } = require('../../scripts/bench/docs');
  const record = (server, perProcessKiB) => ({ server, site: 'static', rssIdle: { processes: 2, perProcessKiB, primaryKiB: 1 } });
  const results = {
    meta: { date: 'd', machine: { cpuModel: 'c', nproc: 2 }, options: { runs: 1, duration: 1, warmup: 0, threads: 1, connections: 1 }, workers: 2 },
    cells: [],
    ratios: [{ scenario: 'h2-html-1k', ratios: { 'svr/nginx': 0.65 } }, { scenario: 'tls-html-1k', ratios: { 'svr/nginx': 0.9 } }],
    cpuPerRequest: {
      connections: 16, rows: [],
      ratios: [
        { scenario: 'html-1k', nodeVersion: '20.20.2', peers: { 'svr/nginx': 1.3, 'svr/node-ceiling': 1.29 } },
        { scenario: 'html-1k', nodeVersion: '24.21.0', peers: { 'svr/nginx': 1.2, 'svr/node-ceiling': 1.25 } },
      ],
    },
    blog: [{ scenario: 'blog-ab-c5', rps: {}, ratios: { 'svr none/bare-cluster rr': 0.98, 'svr none/pm2': 1.02, 'svr none/svrjs': null } }],
    instances: [record('node-ceiling', [51200, 51000]), record('svr', [57344, 56000])],
  };
  const rows = Object.fromEntries(checkTargets(results).map((row) => [row.label, row]));
  assert.equal(Object.keys(rows).length, TARGETS.length);
  assert.deepEqual(rows['html-1k CPU per request ≤ 1.25× nginx'], { label: 'html-1k CPU per request ≤ 1.25× nginx', text: '1.30× (Node 20.20.2); 1.20× (Node 24.21.0)', verdict: '1 of 2' });
  assert.equal(rows['html-1k CPU per request ≤ 1.3× the node ceiling'].verdict, 'yes');
  assert.equal(rows['revalidate-304 CPU per request ≤ 1.25× nginx'].verdict, '–');
  assert.equal(rows['tls-html-1k requests/s ≥ 0.85× nginx'].verdict, 'yes');
  assert.deepEqual([rows['h2-html-1k requests/s ≥ 0.7× nginx'].text, rows['h2-html-1k requests/s ≥ 0.7× nginx'].verdict], ['0.65×', 'no']);
  assert.equal(rows["blog, ab -c 5 (the SVR.JS blog's method): svr ≥ 0.97× the bare cluster (svr's default policy against Node's)"].verdict, 'yes');
  assert.equal(rows['blog, ab -c 5: svr ≥ 1× SVR.JS'].text, 'not measured');
  assert.deepEqual([rows['worker RSS idle ≤ the node ceiling + 5 MiB'].text, rows['worker RSS idle ≤ the node ceiling + 5 MiB'].verdict], ['+6.0 MiB', 'no']);
  assert.match(formatReport(results), /\| h2-html-1k requests\/s ≥ 0\.7× nginx \| 0\.65× \| no \|/);
  assert.match(renderMarkdown(results), /The targets, against this run:/);
});

test('bench-alloc: a window\'s allocated and promoted bytes from the collections in it', () => {
  const { summarise } = require('../../scripts/bench/alloc-probe');
  const heap = (young, old) => [{ spaceName: 'new_space', spaceUsedSize: young }, { spaceName: 'old_space', spaceUsedSize: old }];
  const gc = (gcType, before, after) => ({ gcType, beforeGC: { heapSpaceStatistics: before }, afterGC: { heapSpaceStatistics: after } });
  // start: 1,000 used; 4,000 allocated, a scavenge keeps 500 young and promotes 200; 3,000 more
  // allocated, a mark-compact; then 1,000 more before the end.
  const figures = summarise(1000, [
    gc('Scavenge', heap(4000, 1000), heap(500, 1200)),
    gc('MarkSweepCompact', heap(3500, 1200), heap(0, 1100)),
  ], 2100);
  assert.equal(figures.allocated, 4000 + 3000 + 1000);
  assert.equal(figures.promoted, 200);
  assert.equal(figures.scavenges, 1);
  assert.equal(figures.collections, 2);
});

test('svr listens on the loopback address only, as nginx and the Node programs do, on every site', () => {
  const svrFile = path.join(__dirname, '..', '..', 'svr.js');
  const certificate = { cert: '/x/cert.pem', key: '/x/key.pem' };
  const plain = svrConfig({ port: 4321, wwwroot: '/x', workers: 2, svrFile, site: 'static', certificate });
  assert.equal(plain.port, '127.0.0.1:4321');
  const tls = svrConfig({ port: 4322, wwwroot: '/x', workers: 2, svrFile, site: 'tls', certificate });
  assert.equal(tls.sport, '127.0.0.1:4322');
  assert.equal(tls.disableNonEncryptedServer, true);
});
