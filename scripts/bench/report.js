'use strict';
// Turns the measured runs into medians, ratios and the printed tables (Markdown, so they paste into docs).

const RATIO_PEERS = ['nginx', 'node-ceiling', 'serve', 'http-server', 'bare-cluster', 'svr-single'];
const SCHED_POLICIES = ['none', 'rr'];
// The blog rows: svr and the bare cluster under each policy, PM2 and SVR.JS (under Node's default, rr).
const BLOG_SERVERS = [...SCHED_POLICIES.flatMap((policy) => [`svr-${policy}`, `bare-cluster-${policy}`]), 'pm2', 'svrjs'];
const MAX_ERROR_SHARE = 0.001; // a cell with more errors than this share of its requests gets no ratio

function median(values) {
  const sorted = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
  if (!sorted.length) return null;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function summariseRuns(runs) {
  const measured = runs.filter((run) => !run.failure);
  if (!measured.length) return null;
  return {
    rps: median(measured.map((run) => run.rps)),
    p99Ms: median(measured.map((run) => run.latencyMs.p99)),
    p50Ms: median(measured.map((run) => run.latencyMs.p50)),
    mibPerSecond: median(measured.map((run) => run.bytesPerSecond / 1048576)),
    requests: measured.reduce((sum, run) => sum + run.requests, 0),
    errors: measured.reduce((sum, run) => sum + run.errors, 0),
  };
}

function isComparable(cell) {
  return Boolean(cell && cell.median && cell.check === 'ok' && cell.median.requests > 0 && cell.median.errors <= cell.median.requests * MAX_ERROR_SHARE);
}

function ratioLabel(peer) {
  return peer === 'svr-single' ? 'svr/single-threaded' : `svr/${peer}`;
}

// Ratios of the same round (measured minutes apart at most): their spread shows the machine's noise.
function perRoundRatios(svr, other) {
  const ratios = [];
  for (const run of svr.runs) {
    const peerRun = other.runs.find((candidate) => candidate.round === run.round);
    if (run.rps && peerRun && peerRun.rps) ratios.push(run.rps / peerRun.rps);
  }
  return ratios;
}

function computeRatios(cells, scenarioNames) {
  return scenarioNames.map((scenario) => {
    const svr = cells.find((cell) => cell.scenario === scenario && cell.server === 'svr');
    const ratios = {};
    const ranges = {};
    for (const peer of RATIO_PEERS) {
      const other = cells.find((cell) => cell.scenario === scenario && cell.server === peer);
      if (!svr || !other) continue;
      const label = ratioLabel(peer);
      const measured = svr.median && other.median;
      ratios[label] = !measured ? undefined : isComparable(svr) && isComparable(other) ? svr.median.rps / other.median.rps : null;
      const perRound = ratios[label] ? perRoundRatios(svr, other) : [];
      if (perRound.length > 1) ranges[label] = [Math.min(...perRound), Math.max(...perRound)];
    }
    return { scenario, ratios, perRoundRange: ranges };
  });
}

// The blog workload: svr/bare-cluster under the same policy, and svr's default (none) against the
// bare cluster's (Node's round-robin), per scenario (connections, quiet or busy).
function computeBlogRatios(cells) {
  const scenarios = [...new Set(cells.filter((cell) => cell.scenario.startsWith('blog-')).map((cell) => cell.scenario))];
  return scenarios.map((scenario) => {
    const cellOf = (server) => cells.find((cell) => cell.scenario === scenario && cell.server === server);
    const rps = {};
    for (const server of BLOG_SERVERS) {
      const cell = cellOf(server);
      rps[server] = isComparable(cell) ? cell.median.rps : null;
    }
    const ratio = (a, b) => (rps[a] && rps[b] ? rps[a] / rps[b] : null);
    const sample = cellOf('svr-none') || cellOf('svr-rr') || {};
    return {
      scenario,
      connections: sample.connections || null,
      busy: scenario.endsWith('-busy'),
      rps,
      ratios: {
        'svr/bare-cluster (none)': ratio('svr-none', 'bare-cluster-none'),
        'svr/bare-cluster (rr)': ratio('svr-rr', 'bare-cluster-rr'),
        'svr none/bare-cluster rr': ratio('svr-none', 'bare-cluster-rr'),
        'svr rr/svr none': ratio('svr-rr', 'svr-none'),
        'svr none/pm2': ratio('svr-none', 'pm2'),
        'svr none/svrjs': ratio('svr-none', 'svrjs'),
      },
    };
  });
}

// --- formatting -------------------------------------------------------------------------------------

function formatNumber(value, digits = 0) {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function markdownTable(header, rows) {
  const lines = [header, header.map(() => '---'), ...rows];
  return lines.map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

function cellNote(cell) {
  if (cell.skipped) return cell.skipped;
  if (cell.failure) return cell.failure.split('\n')[0];
  const notes = [];
  if (cell.check !== 'ok') notes.push(cell.check);
  if (cell.encoding) notes.push(cell.encoding);
  if (cell.crashed) notes.push(cell.crashed);
  return notes.join('; ');
}

function resultsTable(cells) {
  const rows = cells.map((cell) => {
    const m = cell.median || {};
    return [cell.scenario, cell.server, formatNumber(m.rps), formatNumber(m.p99Ms, 2), formatNumber(m.errors), cellNote(cell).replace(/\|/g, '/').slice(0, 120)];
  });
  return markdownTable(['scenario', 'server', 'req/s (median)', 'p99 ms', 'errors', 'note'], rows);
}

function ratioCell({ ratios, perRoundRange }, label) {
  if (!(label in ratios)) return '';
  if (ratios[label] === undefined) return '–';
  if (ratios[label] === null) return 'n/c';
  const range = perRoundRange && perRoundRange[label];
  return `${formatNumber(ratios[label], 2)}×${range ? ` (${formatNumber(range[0], 2)}–${formatNumber(range[1], 2)})` : ''}`;
}

function ratiosTable(ratioRows) {
  const labels = RATIO_PEERS.map(ratioLabel).filter((label) => ratioRows.some((row) => label in row.ratios));
  const rows = ratioRows
    .filter((row) => Object.keys(row.ratios).length)
    .map((row) => [row.scenario, ...labels.map((label) => ratioCell(row, label))]);
  return markdownTable(['scenario', ...labels], rows);
}

function mib(kib) {
  return kib === null || kib === undefined ? '–' : formatNumber(kib / 1024, 1);
}

function rssSummary(rss) {
  if (!rss || !rss.perProcessKiB.length) return '–';
  return `${rss.perProcessKiB.map(mib).join(' / ')}`;
}

function startupCell(instance) {
  if (instance.failure) return `failed: ${instance.failure.split('\n')[0].slice(0, 80)}`;
  if (instance.startupMs === null) return `no 200 (${instance.note}); first answer ${formatNumber(instance.firstAnswerMs, 0)}`;
  return formatNumber(instance.startupMs, 0);
}

function processTable(instances) {
  const rows = instances.map((instance) => [
    instance.crashes ? `${instance.server} (crashed ${instance.crashes.length}×)` : instance.server,
    instance.site,
    startupCell(instance),
    rssSummary(instance.rssIdle),
    rssSummary(instance.rssAfterLoad),
  ]);
  return markdownTable(['server', 'site', 'first 200 OK (ms from spawn)', 'worker RSS idle (MiB)', 'worker RSS after load (MiB)'], rows);
}

// svr's worker memory over the node ceiling's, both idle on the static site, the largest worker
// of each (the target is at most 5 MiB over): { svrKiB, ceilingKiB, overKiB }, or null when
// either was not measured.
function idleRssOverCeiling(instances) {
  const largestIdle = (name) => {
    const record = instances.find((instance) => instance.server === name && instance.site === 'static');
    const kib = record && record.rssIdle ? record.rssIdle.perProcessKiB : [];
    return kib.length ? Math.max(...kib) : null;
  };
  const svrKiB = largestIdle('svr');
  const ceilingKiB = largestIdle('node-ceiling');
  if (svrKiB === null || ceilingKiB === null) return null;
  return { svrKiB, ceilingKiB, overKiB: svrKiB - ceilingKiB };
}

// The line under the process table that says it: [line], or [] when either was not measured.
function idleRssNote(instances) {
  const over = idleRssOverCeiling(instances);
  if (over === null) return [];
  const sign = over.overKiB < 0 ? '−' : '+';
  return [`Worker RSS idle, svr over the node ceiling (the largest worker of each, static site): ` +
    `${sign}${mib(Math.abs(over.overKiB))} MiB (svr ${mib(over.svrKiB)}, node ceiling ${mib(over.ceilingKiB)}; target ≤ +5 MiB).`];
}

function ratioText(value) {
  return value === null || value === undefined ? '–' : `${formatNumber(value, 2)}×`;
}

function blogTable(blogRows) {
  const optional = ['svr none/pm2', 'svr none/svrjs']; // shown when PM2 or SVR.JS ran
  const ratioNames = (blogRows.length ? Object.keys(blogRows[0].ratios) : []).filter((name) => !optional.includes(name) || blogRows.some((row) => row.ratios[name] !== null));
  const servers = ['svr-none', 'svr-rr', 'bare-cluster-none', 'bare-cluster-rr', 'pm2', 'svrjs'].filter((server) => blogRows.some((row) => row.rps[server]));
  const rows = blogRows.map((row) => [
    row.scenario,
    String(row.connections || '–'),
    row.busy ? 'one core busy' : 'quiet',
    ...servers.map((server) => formatNumber(row.rps[server])),
    ...ratioNames.map((name) => ratioText(row.ratios[name])),
  ]);
  return markdownTable(['scenario', 'connections', 'machine', ...servers.map((server) => `${server} req/s`), ...ratioNames], rows);
}

function labelsList(labels) {
  return Object.entries(labels || {}).map(([name, label]) => `- \`${name}\`: ${label}`).join('\n');
}

// A row whose middle rounds (all but the lowest and the highest) differ by more than this ratio
// met a machine that changed speed during it: its median, and every ratio built on it, moves with
// the machine more than with the server. In the complete run of 2026-11-28 06:46 UTC
// (docs/performance.md) the revalidate-304, ssjs-hello and blog-fib rows spread 1.01-1.11, the
// tls-html-1k rows, whose medians were above the previous complete run's, 1.44-1.75.
const UNSTEADY_SPREAD = 1.2;

// -> 'unsteady: middle rounds 29.2–37.7 µs' for such a row, else ''.
function unsteadyNote(row) {
  const values = (row.runs || []).map((run) => run.cpuUsPerRequest).filter((value) => Number.isFinite(value) && value > 0).sort((a, b) => a - b);
  if (values.length < 4) return '';
  const middle = values.slice(1, -1);
  const low = middle[0];
  const high = middle[middle.length - 1];
  return high / low > UNSTEADY_SPREAD ? `unsteady: middle rounds ${formatNumber(low, 1)}–${formatNumber(high, 1)} µs` : '';
}

// The CPU-per-request rows: µs of server CPU per request (median of the rounds, their range),
// requests/s of the one pinned worker, svr's CPU over each peer's, and a note on a row that
// failed or whose rounds were unsteady.
function cpuTable(section) {
  const rows = section.rows.map((row) => {
    const ratio = section.ratios.find((candidate) => candidate.scenario === row.scenario && candidate.nodeVersion === row.nodeVersion && row.server === 'svr');
    const peerRatio = (peer) => (!ratio || !(peer in ratio.peers) ? '' : ratio.peers[peer] === null ? 'n/c' : `${formatNumber(ratio.peers[peer], 2)}×`);
    const note = row.skipped || row.failure || (row.check !== 'ok' ? row.check : '') || unsteadyNote(row);
    return [
      row.scenario,
      row.server,
      row.nodeVersion || '–',
      formatNumber(row.cpuUsPerRequest, 1),
      row.range ? `${formatNumber(row.range[0], 1)}–${formatNumber(row.range[1], 1)}` : '–',
      formatNumber(row.rps),
      formatNumber(row.errors),
      peerRatio('svr/nginx'),
      peerRatio('svr/node-ceiling'),
      String(note).replace(/\|/g, '/').slice(0, 100),
    ];
  });
  return markdownTable(['scenario', 'server', 'node', 'µs CPU per request', 'rounds', 'req/s (1 worker)', 'errors', 'svr/nginx CPU', 'svr/node-ceiling CPU', 'note'], rows);
}

function cpuSection(section) {
  if (!section) return [];
  if (section.skipped) return [`CPU per request: not measured (${section.skipped}).`, ''];
  return [
    `CPU time per request (user + system of the server's processes, /proc/PID/stat), one worker pinned to core 0, the load tool (wrk or h2load, 1 thread, ${section.connections} connections${section.blogConnections ? `, ${section.blogConnections} for blog-fib` : ''}) pinned to core 1; each round a fresh server process, started, warmed up and measured; the median of the rounds, their range beside it; lower is better, and svr/peer is svr's CPU over the peer's:`,
    '',
    cpuTable(section),
    '',
  ];
}

function formatReport(results) {
  const blog = results.blog && results.blog.length ? ['The SVR.JS blog workload (scheduling policy: NODE_CLUSTER_SCHED_POLICY; svr\'s default is none (schedulingPolicy), Node\'s rr, which PM2 and SVR.JS run under):', '', blogTable(results.blog), ''] : [];
  const labels = results.scenarioLabels && Object.keys(results.scenarioLabels).length ? ['What some scenarios compare:', '', labelsList(results.scenarioLabels), ''] : [];
  const commit = results.meta.commit ? `commit ${results.meta.commit.label}, ` : '';
  return [
    `## Results (${commit}${results.meta.date}, ${results.meta.machine.cpuModel}, ${results.meta.machine.nproc} cores)`,
    '',
    resultsTable(results.cells),
    '',
    ...labels,
    'Ratios of median requests/s, in brackets the lowest and highest ratio within one round',
    '(–: one side not measured; n/c: not comparable, a check failed or errors > 0.1%):',
    '',
    ratiosTable(results.ratios),
    '',
    ...cpuSection(results.cpuPerRequest),
    ...blog,
    'Processes (RSS per serving process: workers of a primary/master, else the process itself):',
    '',
    processTable(results.instances),
    '',
    ...idleRssNote(results.instances).flatMap((line) => [line, '']),
    ...require('./targets').targetsSection(results), // targets.js requires this module
  ].join('\n');
}

module.exports = {
  median, summariseRuns, computeRatios, computeBlogRatios, formatReport,
  markdownTable, resultsTable, ratiosTable, blogTable, processTable, idleRssOverCeiling, idleRssNote, labelsList, formatNumber, ratioText, cpuTable, cpuSection, unsteadyNote,
};
