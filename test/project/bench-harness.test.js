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
const { SERVERS } = require('../../scripts/bench/servers');
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
  assert.deepEqual(scenarios(fixtures).map((scenario) => scenario.name), SCENARIO_NAMES);
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
