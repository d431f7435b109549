'use strict';
// The benchmark's own arithmetic and parsing (the benchmark itself is `npm run bench`, not a test).
const test = require('node:test');
const assert = require('node:assert/strict');
const { parseReport } = require('../scripts/bench/wrk');
const { median, summariseRuns, computeRatios } = require('../scripts/bench/report');
const { parseOptions } = require('../scripts/bench/options');

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
