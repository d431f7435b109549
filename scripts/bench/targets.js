'use strict';
// The speed and memory targets svr is held to, checked against one run's results: each row says
// what is asked, what this run measured, and whether it holds ("not measured" when the run left
// that row out). The report and docs/performance-latest.md print the table, so a target named in
// docs/performance.md is a figure the bench prints.
const { markdownTable, formatNumber, idleRssOverCeiling, unsteadyNote } = require('./report');

const MIB = 1024;

// kind cpu: svr's CPU per request over a peer's (lower is better), per Node version measured;
// kind throughput: svr's median requests/s over a peer's; kind blog: a ratio of the blog table;
// kind rss: the largest idle svr worker over the largest idle node-ceiling worker;
// kind accessLog: the access log's own CPU per request in its costliest format, per Node version.
const TARGETS = [
  { label: 'html-1k CPU per request ≤ 1.25× nginx', kind: 'cpu', scenario: 'html-1k', peer: 'svr/nginx', max: 1.25 },
  { label: 'html-1k CPU per request ≤ 1.3× the node ceiling', kind: 'cpu', scenario: 'html-1k', peer: 'svr/node-ceiling', max: 1.3 },
  { label: 'revalidate-304 CPU per request ≤ 1.25× nginx', kind: 'cpu', scenario: 'revalidate-304', peer: 'svr/nginx', max: 1.25 },
  { label: 'revalidate-304 CPU per request ≤ 1.3× the node ceiling', kind: 'cpu', scenario: 'revalidate-304', peer: 'svr/node-ceiling', max: 1.3 },
  { label: 'tls-html-1k requests/s ≥ 0.85× nginx', kind: 'throughput', scenario: 'tls-html-1k', peer: 'svr/nginx', min: 0.85 },
  { label: 'h2-html-1k requests/s ≥ 0.7× nginx', kind: 'throughput', scenario: 'h2-html-1k', peer: 'svr/nginx', min: 0.7 },
  { label: "blog, wrk 5 keep-alive connections: svr ≥ 0.97× the bare cluster (svr's default policy against Node's)", kind: 'blog', scenario: 'blog-c5', ratio: 'svr none/bare-cluster rr', min: 0.97 },
  { label: 'blog, the same under one policy (none)', kind: 'blog', scenario: 'blog-c5', ratio: 'svr/bare-cluster (none)', min: 0.97 },
  { label: "blog, ab -c 5 (the SVR.JS blog's method): svr ≥ 0.97× the bare cluster (svr's default policy against Node's)", kind: 'blog', scenario: 'blog-ab-c5', ratio: 'svr none/bare-cluster rr', min: 0.97 },
  { label: 'blog, ab -c 5: svr ≥ 1× PM2', kind: 'blog', scenario: 'blog-ab-c5', ratio: 'svr none/pm2', min: 1 },
  { label: 'blog, ab -c 5: svr ≥ 1× SVR.JS', kind: 'blog', scenario: 'blog-ab-c5', ratio: 'svr none/svrjs', min: 1 },
  { label: 'worker RSS idle ≤ the node ceiling + 5 MiB', kind: 'rss', maxOverKiB: 5 * MIB },
  { label: 'access log ≤ 2 µs of CPU per request, every format (combined / json)', kind: 'accessLog', maxNs: 2000 },
];

function holds(target, value) {
  if (target.max !== undefined) return value <= target.max;
  return value >= target.min;
}

// Whether svr's CPU row or its peer's, behind one ratio of a CPU target, had rounds that moved
// with the machine (report.js's unsteadyNote): the ratio is then worth less than it looks.
function cpuRowsUnsteady(results, target, nodeVersion) {
  const peer = target.peer.split('/')[1]; // 'svr/nginx' -> 'nginx'
  return ((results.cpuPerRequest && results.cpuPerRequest.rows) || []).some((row) => row.scenario === target.scenario
    && ((row.server === 'svr' && row.nodeVersion === nodeVersion) || (row.server === peer && (peer === 'nginx' || row.nodeVersion === nodeVersion)))
    && unsteadyNote(row) !== '');
}

// [{ text, held }] for one target: one entry per Node version for the CPU rows, else one.
function measured(target, results) {
  if (target.kind === 'cpu') {
    const ratios = ((results.cpuPerRequest && results.cpuPerRequest.ratios) || []).filter((row) => row.scenario === target.scenario);
    return ratios.filter((row) => Number.isFinite(row.peers[target.peer])).map((row) => {
      const value = row.peers[target.peer];
      const unsteady = cpuRowsUnsteady(results, target, row.nodeVersion) ? ', unsteady rounds' : '';
      return { text: `${formatNumber(value, 2)}× (Node ${row.nodeVersion}${unsteady})`, held: holds(target, value) };
    });
  }
  if (target.kind === 'throughput') {
    const row = (results.ratios || []).find((candidate) => candidate.scenario === target.scenario);
    const value = row && row.ratios[target.peer];
    return Number.isFinite(value) ? [{ text: `${formatNumber(value, 2)}×`, held: holds(target, value) }] : [];
  }
  if (target.kind === 'blog') {
    const row = (results.blog || []).find((candidate) => candidate.scenario === target.scenario);
    const value = row && row.ratios[target.ratio];
    return Number.isFinite(value) ? [{ text: `${formatNumber(value, 2)}×`, held: holds(target, value) }] : [];
  }
  if (target.kind === 'accessLog') {
    const rows = ((results.accessLogCost && results.accessLogCost.rows) || []).filter((row) => row.formats);
    return rows.map((row) => {
      const costs = Object.values(row.formats).map((cost) => cost.nsPerRequest);
      const text = costs.map((ns) => formatNumber(ns / 1000, 2)).join(' / ');
      return { text: `${text} µs (Node ${row.nodeVersion})`, held: costs.every((ns) => ns > 0 && ns <= target.maxNs) };
    });
  }
  const over = idleRssOverCeiling(results.instances || []);
  if (over === null) return [];
  return [{ text: `${over.overKiB < 0 ? '−' : '+'}${formatNumber(Math.abs(over.overKiB) / MIB, 1)} MiB`, held: over.overKiB <= target.maxOverKiB }];
}

// [{ label, text, verdict }] for every target.
function checkTargets(results) {
  return TARGETS.map((target) => {
    const values = measured(target, results);
    if (!values.length) return { label: target.label, text: 'not measured', verdict: '–' };
    const held = values.filter((value) => value.held).length;
    const verdict = held === values.length ? 'yes' : held === 0 ? 'no' : `${held} of ${values.length}`;
    return { label: target.label, text: values.map((value) => value.text).join('; '), verdict };
  });
}

function targetsSection(results) {
  const rows = checkTargets(results).map((row) => [row.label, row.text, row.verdict]);
  return ['The targets, against this run:', '', markdownTable(['target', 'this run', 'holds?'], rows), ''];
}

module.exports = { TARGETS, checkTargets, targetsSection };
