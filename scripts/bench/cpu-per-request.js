'use strict';
// CPU time per request: each server with one worker, the server's processes pinned to core 0 and
// the load tool (and a proxy's backend) to core 1, so that neither takes the other's CPU. The
// figure is the CPU time (user + system, /proc/PID/stat) the server's whole process tree used
// during a run, divided by the requests answered in it: it moves far less with a neighbour's load
// than requests/s does, because it counts the server's own work, not how much of the machine it got.
//
// Rows: svr, nginx and the node ceiling (node-ceiling.js for files, HTTPS, HTTP/2 and the proxy,
// bare-cluster.js --workload hello or fib for the scripts), each Node-based one once per Node version
// asked for (--node 20,22,24; default: the running Node).
const fs = require('fs');
const os = require('os');
const path = require('path');
const { HOST, TLS, nginxCommand, svrConfig, svrEntry, availableCores } = require('./servers');
const { backendConf, nginxProxyConf, writeNginx } = require('./proxy');
const { freePort, startProcess, stopProcess, fetchOnce, fetchH2Once } = require('./processes');
const { runWrk } = require('./wrk');
const { runH2load } = require('./h2load');
const { treeCpuSeconds } = require('./pinning');
const { median } = require('./report');
const { HELLO_EXPECTED_BODY } = require('./hello-work');
const { FIB_PATH, FIB_EXPECTED_BODY } = require('./fib-work');
const { nodeBinary, exactVersion } = require('../node-versions');

const SERVER_CORE = 0;
const LOAD_CORE = 1;
const CONNECTIONS = 16; // enough to keep one worker busy; the issue's figures used wrk -t1 -c16
const BLOG_CONNECTIONS = 5; // the SVR.JS blog's ab -c 5, here as keep-alive connections

// name, the site the servers run on, what is requested, the check of the answer, the servers.
const CPU_SCENARIOS = [
  { name: 'html-1k', site: 'static', path: '/bench-1k.html', servers: ['nginx', 'node-ceiling', 'svr'], expect: (res, sizes) => res.status === 200 && res.body.length === sizes.html },
  { name: 'revalidate-304', site: 'static', path: '/bench-100k.js', revalidate: true, servers: ['nginx', 'node-ceiling', 'svr'], expect: (res) => res.status === 304 },
  { name: 'js-100k', site: 'static', path: '/bench-100k.js', servers: ['nginx', 'node-ceiling', 'svr'], expect: (res, sizes) => res.status === 200 && res.body.length === sizes.js },
  { name: 'proxy-1k', site: 'proxy', path: '/item.json', servers: ['nginx', 'node-ceiling', 'svr'], expect: (res) => res.status === 200 && res.body.length === 1024 },
  { name: 'ssjs-hello', site: 'hello', path: '/', servers: ['node-ceiling', 'svr'], expect: (res) => res.status === 200 && res.body.toString() === HELLO_EXPECTED_BODY },
  // The blog's BigInt Fibonacci (about 2 ms of one core): what svr adds to a script's own work.
  { name: 'blog-fib', site: 'blog', path: FIB_PATH, connections: BLOG_CONNECTIONS, servers: ['node-ceiling', 'svr'], expect: (res) => res.status === 200 && res.body.toString() === FIB_EXPECTED_BODY },
  { name: 'tls-html-1k', site: TLS, path: '/bench-1k.html', servers: ['nginx', 'node-ceiling', 'svr'], expect: (res, sizes) => res.status === 200 && res.body.length === sizes.html && res.tlsVersion === 'TLSv1.3' },
  { name: 'h2-html-1k', site: TLS, path: '/bench-1k.html', tool: 'h2load', servers: ['nginx', 'node-ceiling', 'svr'], expect: (res, sizes) => res.status === 200 && res.body.length === sizes.html && res.alpn === 'h2' },
];
const CPU_SCENARIO_NAMES = CPU_SCENARIOS.map((scenario) => scenario.name);
const CPU_SERVERS = ['nginx', 'node-ceiling', 'svr'];

function cpuScenariosFor(only) {
  return only.length ? CPU_SCENARIOS.filter((scenario) => only.includes(scenario.name)) : CPU_SCENARIOS;
}

// The sites whose node ceiling is the bare cluster running the same script (bare-cluster.js --workload).
const SCRIPT_WORKLOADS = { hello: 'hello', blog: 'fib' };

// What each server runs as on a site, with one worker. node: the Node binary (Node-based servers).
function commandFor({ server, site, node, port, workDir, tools, fixtures, backendPort, options }) {
  const wwwroot = fixtures.sites[site === 'proxy' ? 'backend' : site];
  if (server === 'nginx') {
    if (site === 'proxy') {
      const conf = writeNginx(workDir, 'nginx', nginxProxyConf(path.join(workDir, 'nginx'), port, backendPort, 1));
      return { command: tools.nginx, args: ['-p', conf.prefix, '-c', conf.conf] };
    }
    return nginxCommand({ tools, wwwroot, port, workDir, workers: 1, site, fixtures });
  }
  if (server === 'node-ceiling') {
    const workload = SCRIPT_WORKLOADS[site];
    if (workload) return { command: node, args: [path.join(__dirname, 'bare-cluster.js'), '--host', HOST, '--port', String(port), '--workers', '1', '--workload', workload] };
    const target = site === 'proxy' ? ['--proxy', `http://${HOST}:${backendPort}`] : ['--root', wwwroot];
    if (site === TLS) target.push('--cert', fixtures.certificate.cert, '--key', fixtures.certificate.key); // svr's certificate and TLS 1.3
    return { command: node, args: [path.join(__dirname, 'node-ceiling.js'), ...target, '--host', HOST, '--port', String(port), '--workers', '1'] };
  }
  const svrFile = svrEntry(options);
  const root = site === 'proxy' ? path.join(workDir, 'web') : wwwroot; // the proxy answers everything; an empty root
  fs.mkdirSync(root, { recursive: true });
  const config = svrConfig({ port, wwwroot: root, workers: 1, svrFile, site, certificate: fixtures.certificate });
  if (site === 'proxy') config.proxy = [{ path: '/', upstreams: [`http://${HOST}:${backendPort}`] }];
  const configFile = path.join(workDir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify(config, null, 2));
  return { command: node, args: [svrFile, '--config', configFile], cwd: workDir };
}

// One entry per server and Node version taking part: { server, node, nodeVersion, label }.
function serverVariants(serverNames, nodes) {
  const variants = [];
  for (const server of CPU_SERVERS.filter((name) => !serverNames.length || serverNames.includes(name))) {
    if (server === 'nginx') variants.push({ server, node: null, nodeVersion: null });
    else for (const node of nodes) variants.push({ server, node: node.binary, nodeVersion: node.version });
  }
  return variants;
}

function unavailable(server, site, tools, fixtures) {
  if (server === 'nginx' && !tools.nginx) return 'nginx not installed';
  if (site === 'proxy' && !tools.nginx) return 'the proxy rows need nginx as their backend';
  if (site === TLS && !fixtures.certificate) return 'no certificate (openssl not installed)';
  return null;
}

async function startPinned({ spec, tools, core, logFile, readyUrl }) {
  return startProcess({ ...spec, command: tools.taskset, args: ['-c', String(core), spec.command, ...spec.args], logFile, readyUrl });
}

// The headers the load tool sends (an If-None-Match for the 304 row) and whether the answer is right.
async function prepare(scenario, url, sizes) {
  const fetcher = scenario.tool === 'h2load' ? fetchH2Once : fetchOnce;
  try {
    let headers = {};
    if (scenario.revalidate) {
      const first = await fetchOnce(url);
      if (!first.headers.etag) return { headers, check: `no ETag (${first.status})` };
      headers = { 'If-None-Match': first.headers.etag };
    }
    const res = await fetcher(url, headers);
    return { headers, check: scenario.expect(res, sizes) ? 'ok' : `unexpected answer: ${res.status}, ${res.body.length} bytes` };
  } catch (err) {
    return { headers: {}, check: `request failed: ${err.code || err.message}` };
  }
}

async function measureOnce({ scenario, request, pid, tools, seconds }) {
  const pin = { taskset: tools.taskset, core: LOAD_CORE };
  const before = treeCpuSeconds(pid);
  const run = scenario.tool === 'h2load' ? await runH2load({ h2load: tools.h2load, pin, ...request, seconds }) : await runWrk({ wrk: tools.wrk, pin, ...request, seconds });
  const cpuSeconds = treeCpuSeconds(pid) - before;
  if (run.failure) return run;
  return { ...run, cpuSeconds, cpuUsPerRequest: run.requests > 0 ? (cpuSeconds * 1e6) / run.requests : null };
}

// Every variant of one site, in rounds (each round starting with the next server, as the
// throughput rows do). Each measured run has a process of its own: the server is started pinned,
// its answer checked, warmed up, measured and stopped before the next server's turn. Why: a
// process kept for all the rounds waits idle while the other servers take theirs, and what ran
// on its core meanwhile moved its next figures (by up to a quarter, for some servers and Node
// versions and not others: docs/performance.md), so a figure said as much about the bench's
// order as about the server. A run in a fresh process, measured right after its warm-up, is what
// a restarted server does, and the spread of the rounds now shows the spread between processes.
async function measureSite({ site, scenarios, variants, context, backendPort }) {
  const { options, log } = context;
  const rows = [];
  for (const scenario of scenarios) {
    const cells = [];
    for (const variant of variants.filter((candidate) => scenario.servers.includes(candidate.server))) {
      const row = { scenario: scenario.name, ...variantFields(variant), runs: [] };
      const reason = unavailable(variant.server, site, context.tools, context.fixtures);
      if (reason) rows.push({ ...row, skipped: reason });
      else cells.push({ variant, row });
    }
    for (let round = 0; round < options.runs; round++) {
      for (const cell of cells.map((_, i) => cells[(i + round) % cells.length])) {
        const run = await measureFresh({ scenario, site, variant: cell.variant, context, backendPort });
        run.round = round + 1;
        run.loadAverage = Number(os.loadavg()[0].toFixed(2));
        cell.row.runs.push(run);
        log(`  cpu ${scenario.name} ${cell.row.label} run ${round + 1}/${options.runs}: ${run.failure || `${run.cpuUsPerRequest.toFixed(1)} µs CPU per request, ${Math.round(run.rps)} req/s, errors ${run.errors}`}`);
      }
    }
    rows.push(...cells.map((cell) => summarise({ ...cell.row, check: rowCheck(cell.row.runs) })));
  }
  return rows;
}

// A row's check: the first round whose answer was wrong, else 'ok' (a round that did not start
// has no check; summarise reports a row none of whose rounds ran).
function rowCheck(runs) {
  const wrong = runs.find((run) => run.check !== undefined && run.check !== 'ok');
  if (wrong) return wrong.check;
  return runs.some((run) => run.check === 'ok') ? 'ok' : 'no answer checked';
}

// One measured run in a process of its own: start pinned, check, warm up, measure, stop.
async function measureFresh({ scenario, site, variant, context, backendPort }) {
  const { tools, fixtures, options } = context;
  const workDir = fs.mkdtempSync(path.join(fixtures.root, `cpu-${variant.server}-${site}-`));
  const port = await freePort();
  const baseUrl = `${site === TLS ? 'https' : 'http'}://${HOST}:${port}`;
  const spec = commandFor({ ...variant, site, port, workDir, tools, fixtures, backendPort, options });
  let started;
  try {
    started = await startPinned({ spec, tools, core: SERVER_CORE, logFile: path.join(workDir, 'output.log'), readyUrl: baseUrl + scenario.path });
  } catch (err) {
    return { failure: `did not start: ${err.message.split('\n')[0]}` };
  }
  try {
    const prepared = await prepare(scenario, baseUrl + scenario.path, fixtures.sizes);
    const request = { url: baseUrl + scenario.path, headers: prepared.headers, threads: 1, connections: scenario.connections || CONNECTIONS };
    if (options.warmup > 0) await measureOnce({ scenario, request, pid: started.pid, tools, seconds: options.warmup });
    const run = await measureOnce({ scenario, request, pid: started.pid, tools, seconds: options.duration });
    return { ...run, check: prepared.check, pid: started.pid };
  } finally {
    await stopProcess(started.proc);
  }
}

function labelOf(variant) {
  return variant.nodeVersion ? `${variant.server} (node ${variant.nodeVersion})` : variant.server;
}

function variantFields(variant) {
  return { server: variant.server, nodeVersion: variant.nodeVersion, label: labelOf(variant) };
}

function summarise(row) {
  const measured = row.runs.filter((run) => !run.failure && run.cpuUsPerRequest !== null);
  if (!measured.length) return { ...row, failure: row.runs.length ? row.runs[0].failure : 'no run' };
  const perRequest = measured.map((run) => run.cpuUsPerRequest);
  return {
    ...row,
    cpuUsPerRequest: median(perRequest),
    range: [Math.min(...perRequest), Math.max(...perRequest)],
    rps: median(measured.map((run) => run.rps)),
    requests: measured.reduce((sum, run) => sum + run.requests, 0),
    errors: measured.reduce((sum, run) => sum + run.errors, 0),
  };
}

// svr's CPU per request over each peer's, per scenario and Node version (lower is better for svr).
function cpuRatios(rows) {
  const usable = (row) => row && row.check === 'ok' && Number.isFinite(row.cpuUsPerRequest) && row.errors <= row.requests * 0.001;
  const ratios = [];
  for (const row of rows.filter((candidate) => candidate.server === 'svr')) {
    const peers = {};
    for (const peer of ['nginx', 'node-ceiling']) {
      const other = rows.find((candidate) => candidate.scenario === row.scenario && candidate.server === peer && (peer === 'nginx' || candidate.nodeVersion === row.nodeVersion));
      if (other) peers[`svr/${peer}`] = usable(row) && usable(other) ? row.cpuUsPerRequest / other.cpuUsPerRequest : null;
    }
    ratios.push({ scenario: row.scenario, nodeVersion: row.nodeVersion, peers });
  }
  return ratios;
}

function nodesFor(options, log) {
  const versions = options.node.length ? options.node : [process.versions.node];
  return versions.map((version) => {
    const binary = nodeBinary(version, log);
    return { binary, version: binary === process.execPath ? process.versions.node : exactVersion(binary) };
  });
}

// The whole section: null when none of its scenarios is selected or the machine cannot pin.
async function measureCpuPerRequest(context) {
  const { options, tools, log } = context;
  const scenarios = cpuScenariosFor(options.only);
  if (!options.cpuPerRequest || !scenarios.length) return null;
  if (availableCores() < 2) return { skipped: 'one core: the server and the load tool cannot be pinned apart', rows: [], ratios: [] };
  if (!tools.taskset) return { skipped: 'taskset not installed (util-linux)', rows: [], ratios: [] };
  const nodes = nodesFor(options, log);
  const variants = serverVariants(options.servers, nodes);
  const rows = [];
  for (const site of [...new Set(scenarios.map((scenario) => scenario.site))]) {
    const siteScenarios = scenarios.filter((scenario) => scenario.site === site);
    if (site === 'proxy') rows.push(...(await withBackend(context, (backendPort) => measureSite({ site, scenarios: siteScenarios, variants, context, backendPort }))));
    else rows.push(...(await measureSite({ site, scenarios: siteScenarios, variants, context })));
  }
  rows.sort((a, b) => CPU_SCENARIO_NAMES.indexOf(a.scenario) - CPU_SCENARIO_NAMES.indexOf(b.scenario));
  const blogConnections = scenarios.some((scenario) => scenario.name === 'blog-fib') ? BLOG_CONNECTIONS : undefined;
  return { nodeVersions: nodes.map((node) => node.version), connections: CONNECTIONS, blogConnections, rows, ratios: cpuRatios(rows) };
}

// The proxy rows' backend: an nginx serving 1 KiB, on the load tool's core (its CPU is not counted).
async function withBackend(context, measure) {
  const { tools, fixtures } = context;
  if (!tools.nginx) return measure(null);
  const dir = fs.mkdtempSync(path.join(fixtures.root, 'cpu-backend-'));
  const port = await freePort();
  const conf = writeNginx(dir, 'backend', backendConf(path.join(dir, 'backend'), port, fixtures.sites.backend));
  const started = await startPinned({ spec: { command: tools.nginx, args: ['-p', conf.prefix, '-c', conf.conf] }, tools, core: LOAD_CORE, logFile: path.join(dir, 'backend.log'), readyUrl: `http://${HOST}:${port}/item.json` });
  try {
    return await measure(port);
  } finally {
    await stopProcess(started.proc);
  }
}

module.exports = { measureCpuPerRequest, nodesFor, SERVER_CORE, cpuRatios, summarise, serverVariants, cpuScenariosFor, commandFor, CPU_SCENARIO_NAMES, CONNECTIONS, BLOG_CONNECTIONS };
