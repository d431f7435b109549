#!/usr/bin/env node
'use strict';
// `npm run bench`: svr beside nginx, serve, http-server, a bare cluster server and the node ceiling,
// over the same generated files, wrk (h2load for HTTP/2, openssl s_time for full TLS handshakes)
// against one server at a time, in rounds.
// Prints one results table, the ratios, the blog workload's table and the servers' startup time
// and worker memory; writes the same as JSON, then a chart (SVG) and a Markdown page from that JSON.
const fs = require('fs');
const os = require('os');
const path = require('path');
const { parseOptions } = require('./bench/options');
const { ensureTools, ROOT } = require('./bench/tools');
const { createFixtures, removeFixtures } = require('./bench/fixtures');
const { scenarios } = require('./bench/scenarios');
const { SERVERS, SITES, HOST, TLS, availableCores } = require('./bench/servers');
const { freePort, startProcess, stopProcess, killAllStarted, workerRss, delay } = require('./bench/processes');
const { runWrk } = require('./bench/wrk');
const { runH2load } = require('./bench/h2load');
const { runSTime } = require('./bench/s-time');
const { runAb } = require('./bench/ab');
const { withBusyLoop } = require('./bench/busy-loop');
const { summariseRuns, computeRatios, computeBlogRatios, formatReport } = require('./bench/report');
const { measuredCommit } = require('./bench/commit');
const { writeDocs } = require('./bench/docs');
const { measureCpuPerRequest, nodesFor, CPU_SCENARIO_NAMES } = require('./bench/cpu-per-request');
const { measureAccessLogCost } = require('./bench/access-log-cost');
const { machineInfo } = require('./bench/machine');

const IDLE_SETTLE_MS = 1000; // after the first 200 OK, before idle RSS is read: let every worker finish starting
const BUSY_LOOP_MARGIN_S = 10; // a busy loop child stops by itself this long after its run should have ended

function log(message) {
  process.stderr.write(`${message}\n`);
}

function pickByName(all, names, kind) {
  if (!names.length) return all;
  const unknown = names.filter((name) => !all.some((item) => item.name === name));
  if (unknown.length) throw new Error(`unknown ${kind}: ${unknown.join(', ')} (known: ${all.map((item) => item.name).join(', ')})`);
  return all.filter((item) => names.includes(item.name));
}

// The throughput scenarios --only names (all without --only); a name that is neither one of them
// nor a CPU-per-request scenario is refused.
function throughputScenarios(all, only) {
  if (!only.length) return all;
  const unknown = only.filter((name) => !all.some((scenario) => scenario.name === name) && !CPU_SCENARIO_NAMES.includes(name));
  if (unknown.length) throw new Error(`unknown scenario: ${unknown.join(', ')} (known: ${[...all.map((scenario) => scenario.name), ...CPU_SCENARIO_NAMES.filter((name) => !all.some((scenario) => scenario.name === name))].join(', ')})`);
  return all.filter((scenario) => only.includes(scenario.name));
}

function formatRun(run) {
  if (run.failure) return run.failure;
  const p99 = run.latencyMs.p99 === null ? 'n/a' : `${run.latencyMs.p99.toFixed(2)} ms`; // h2load has no percentiles
  return `${Math.round(run.rps)} req/s, p99 ${p99}, errors ${run.errors}`;
}

// Whether a server takes part in a scenario (either side may name the other).
function takesPart(server, scenario) {
  if (scenario.servers && !scenario.servers.includes(server.name)) return false;
  return !server.scenarios || server.scenarios.includes(scenario.name);
}

// Fetches once to check the answer and to learn the headers wrk must send (e.g. the ETag).
async function prepareCell({ instance, scenario, context }) {
  const cell = { scenario: scenario.name, server: instance.server.name, runs: [] };
  if (!instance.proc) return { ...cell, failure: instance.record.failure };
  const reason = instance.server.unsupported && instance.server.unsupported[scenario.name];
  if (reason) return { ...cell, skipped: `n/a: ${reason}` };
  const url = instance.baseUrl + scenario.path;
  const prepared = await scenario.prepare(url);
  Object.assign(cell, { check: prepared.check, encoding: prepared.encoding || null, requestHeaders: prepared.headers, headerNames: prepared.headerNames, tlsVersion: prepared.tlsVersion });
  if (prepared.unreachable) return { ...cell, failure: prepared.check };
  if (prepared.skip) return { ...cell, skipped: prepared.check };
  if (prepared.check !== 'ok') log(`  ${cell.server} ${scenario.name}: check failed (${prepared.check}); measuring anyway`);
  const { tools, options } = context;
  const connections = scenario.connections || options.connections;
  cell.connections = connections;
  const tool = loadTool(scenario, tools);
  if (tool.missing) return { ...cell, skipped: tool.missing };
  cell.request = { ...tool, url, headers: prepared.headers, threads: options.threads, connections, expectedBytes: scenario.expectedBytes };
  return cell;
}

// The load generator a scenario asks for: wrk, h2load (HTTP/2), openssl s_time (full TLS handshakes)
// or ab (the SVR.JS blog's method).
function loadTool(scenario, tools) {
  if (scenario.tool === 'h2load') return tools.h2load ? { h2load: tools.h2load } : { missing: 'h2load not installed (apt-get install nghttp2-client)' };
  if (scenario.tool === 's_time') return tools.openssl ? { sTime: tools.openssl } : { missing: 'openssl not installed' };
  if (scenario.tool === 'ab') return tools.ab ? { ab: tools.ab } : { missing: 'ab not installed (apt-get install apache2-utils)' };
  return { wrk: tools.wrk };
}

const RUNNERS = { h2load: runH2load, sTime: ({ sTime, ...request }) => runSTime({ openssl: sTime, ...request }), ab: runAb, wrk: runWrk };

// The node ceiling must answer with the header fields svr sends, or it is not the same work.
function checkSameHeadersAsSvr(cells) {
  const svr = cells.find((cell) => cell.server === 'svr');
  const ceiling = cells.find((cell) => cell.server === 'node-ceiling');
  if (!svr || !ceiling || !svr.headerNames || !ceiling.headerNames || ceiling.check !== 'ok') return;
  const missing = svr.headerNames.filter((name) => !ceiling.headerNames.includes(name));
  const extra = ceiling.headerNames.filter((name) => !svr.headerNames.includes(name));
  if (missing.length || extra.length) ceiling.check = `header fields differ from svr's: missing ${missing.join(',') || 'none'}, extra ${extra.join(',') || 'none'}`;
}

// One load run with the scenario's tool, beside a busy loop when the scenario asks for one.
function runLoad(scenario, request, seconds) {
  const run = RUNNERS[Object.keys(RUNNERS).find((name) => request[name])];
  return withBusyLoop(Boolean(scenario.busy), seconds + BUSY_LOOP_MARGIN_S, () => run({ ...request, seconds }));
}

// Round i measures every server once, starting with a different server each round, so that a noisy
// moment on the shared machine does not fall on one server only.
function rotated(items, offset) {
  return items.map((_, i) => items[(i + offset) % items.length]);
}

function hasExited(instance) {
  return Boolean(instance.proc) && (instance.proc.exitCode !== null || instance.proc.signalCode !== null);
}

async function measureScenario({ scenario, instances, context }) {
  const { options } = context;
  const cells = [];
  for (const instance of instances) if (takesPart(instance.server, scenario)) cells.push(await prepareCell({ instance, scenario, context }));
  checkSameHeadersAsSvr(cells);
  const measurable = cells.filter((cell) => cell.request);
  const instanceOf = new Map(measurable.map((cell) => [cell, instances.find((instance) => instance.server.name === cell.server)]));
  if (options.warmup > 0) for (const cell of measurable) await runLoad(scenario, cell.request, options.warmup);
  for (let round = 0; round < options.runs; round++) {
    for (const cell of rotated(measurable, round)) {
      if (hasExited(instanceOf.get(cell))) continue; // a crash is reported once, below
      const run = await runLoad(scenario, cell.request, options.duration);
      run.round = round + 1;
      run.loadAverage = Number(os.loadavg()[0].toFixed(2)); // how busy the shared machine was
      log(`  ${scenario.name} ${cell.server} run ${round + 1}/${options.runs}: ${formatRun(run)}`);
      cell.runs.push(run);
    }
  }
  for (const cell of measurable) {
    delete cell.request;
    cell.median = summariseRuns(cell.runs);
    if (!cell.median) cell.failure = cell.runs.length ? cell.runs[0].failure : 'no run';
    if (hasExited(instanceOf.get(cell))) await reportCrashAndRestart(instanceOf.get(cell), cell, context);
  }
  return cells;
}

// A server that died under load (serve's file-descriptor leak on 304s does that) is reported on
// the scenario that killed it and started again for the scenarios after it.
async function reportCrashAndRestart(instance, cell, context) {
  const { code, signal } = await instance.proc.exitedPromise;
  const lastLines = readTail(instance.logFile);
  cell.crashed = `server exited (${signal || code}) during this scenario: ${lastLines}`;
  instance.record.crashes = (instance.record.crashes || []).concat({ scenario: cell.scenario, exit: signal || code, log: lastLines });
  log(`[${instance.server.name} ${instance.site}] exited during ${cell.scenario}: ${lastLines}; restarting`);
  await launch(instance, context);
}

function readTail(file) {
  try {
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n');
    const errorLine = lines.find((line) => /^\w*Error\b|^Error:|E[A-Z]+:/.test(line.trim()));
    return (errorLine || lines[lines.length - 1] || '').trim().slice(0, 200);
  } catch {
    return '';
  }
}

// Starts (or restarts) an instance's process on a free port; the first start's timing is kept.
async function launch(instance, context) {
  const { server, site, record, readyPath } = instance;
  const { tools, fixtures, options, workers } = context;
  const workDir = fs.mkdtempSync(path.join(fixtures.root, `${server.name}-${site}-`));
  const port = await freePort();
  instance.baseUrl = `${site === TLS ? 'https' : 'http'}://${HOST}:${port}`;
  instance.logFile = path.join(workDir, 'output.log');
  instance.proc = null;
  const spec = server.command({ tools, wwwroot: fixtures.sites[site], port, workDir, options, workers, site, fixtures });
  log(`[${server.name} ${site}] starting on port ${port}`);
  try {
    const started = await startProcess({ ...spec, logFile: instance.logFile, readyUrl: instance.baseUrl + readyPath });
    Object.assign(instance, { proc: started.proc, pid: started.pid });
    if (record.startupMs !== undefined) return;
    record.startupMs = started.startupMs;
    record.firstAnswerMs = started.firstAnswerMs;
    if (started.startupMs === null) {
      record.note = `${readyPath} answered ${started.lastStatus}, never 200`;
      log(`[${server.name} ${site}] up, but ${record.note}`);
    }
  } catch (err) {
    log(`[${server.name} ${site}] did not start: ${err.message}`);
    record.failure = `did not start: ${err.message}`;
  }
}

async function startInstance({ server, site, readyPath, context }) {
  const instance = { server, site, readyPath, record: { server: server.name, site } };
  await launch(instance, context);
  return instance;
}

function unavailableCells(server, reason, siteScenarios) {
  log(`[${server.name}] skipped: ${reason}`);
  return siteScenarios.map((scenario) => ({ scenario: scenario.name, server: server.name, runs: [], skipped: reason }));
}

// All servers of a site are started one after the other and stay up; each scenario then loads
// them one at a time (see measureScenario).
async function benchSite(site, context) {
  const siteScenarios = context.scenarioList.filter((scenario) => scenario.site === site);
  const servers = context.serverList.filter((server) => server.sites.includes(site) && siteScenarios.some((scenario) => takesPart(server, scenario)));
  const cells = [];
  const instances = [];
  if (!siteScenarios.length) return { instances: [], cells };
  for (const server of servers) {
    const unavailable = server.available(context.tools, context.options, context.fixtures, site);
    if (unavailable) cells.push(...unavailableCells(server, unavailable, siteScenarios.filter((scenario) => takesPart(server, scenario))));
    else instances.push(await startInstance({ server, site, readyPath: siteScenarios[0].path, context }));
  }
  const running = () => instances.filter((instance) => instance.proc && !hasExited(instance));
  try {
    await delay(IDLE_SETTLE_MS);
    for (const instance of running()) instance.record.rssIdle = workerRss(instance.pid);
    for (const scenario of siteScenarios) cells.push(...(await measureScenario({ scenario, instances, context })));
    for (const instance of running()) instance.record.rssAfterLoad = workerRss(instance.pid);
  } finally {
    for (const instance of instances) if (instance.proc) await stopProcess(instance.proc);
  }
  return { instances: instances.map((instance) => instance.record), cells };
}

function sortCells(cells, scenarioList, serverList) {
  const scenarioIndex = (cell) => scenarioList.findIndex((scenario) => scenario.name === cell.scenario);
  const serverIndex = (cell) => serverList.findIndex((server) => server.name === cell.server);
  return cells.sort((a, b) => scenarioIndex(a) - scenarioIndex(b) || serverIndex(a) - serverIndex(b));
}

function writeJson(results, options) {
  const stamp = results.meta.date.replace(/:/g, '-').replace(/\.\d+Z$/, 'Z');
  const file = path.resolve(ROOT, options.out || path.join('.bench', `results-${stamp}.json`));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(results, null, 2) + '\n');
  return file;
}

// `npm run bench -- render FILE`: the report, docs/performance-latest.md and performance.svg
// written again from a results JSON, as the run that made it would write them now (after a change
// to the report, for one). The figures are the run's; nothing is measured.
function renderFrom(file) {
  if (!file) throw new Error('usage: npm run bench -- render RESULTS.json');
  const jsonFile = path.resolve(file);
  console.log(formatReport(JSON.parse(fs.readFileSync(jsonFile, 'utf8'))));
  const docs = writeDocs({ jsonFile, options: { docs: true }, root: ROOT, log });
  log(`chart and table written to ${docs.svg} and ${docs.markdown}, from ${jsonFile}`);
}

async function main() {
  if (process.argv[2] === 'render') return void renderFrom(process.argv[3]);
  if (process.argv[2] === 'proxy') return void (await require('./bench/proxy').runProxyBench(process.argv.slice(3), log)); // svr proxy vs nginx proxy_pass
  if (process.argv[2] === 'php') return void (await require('./bench/php').runPhpBench(process.argv.slice(3), log)); // svr fastcgi vs nginx fastcgi_pass and Caddy php_fastcgi
  if (process.argv[2] === 'proxycache') return void (await require('./bench/proxy-cache').runProxyCacheBench(process.argv.slice(3), log)); // cached proxy vs static vs nginx proxy_cache
  if (process.argv[2] === 'ratelimit') return void (await require('./bench/rate-limits').runRateLimitBench(process.argv.slice(3), log)); // CPU per request with and without a rate limit
  const options = parseOptions(process.argv.slice(2));
  if (options.help) return void console.log(options.usage);
  const serverList = pickByName(SERVERS, options.servers, 'server');
  const commit = measuredCommit(path.dirname(path.resolve(options.svr || path.join(ROOT, 'svr.js'))));
  log(`svr bench: measuring commit ${commit.label}`);
  const tools = ensureTools(options, log);
  if (!tools.wrk) throw new Error('wrk is needed: apt-get install wrk (or run as root so the benchmark installs it)');
  const fixtures = createFixtures({ openssl: tools.openssl });
  process.on('exit', () => {
    killAllStarted();
    if (!options.keep) removeFixtures(fixtures);
  });
  const scenarioList = options.throughput ? throughputScenarios(scenarios(fixtures), options.only) : [];
  const context = { tools, fixtures, options, workers: options.workers || availableCores(), scenarioList, serverList, log };
  const meta = {
    date: new Date().toISOString(),
    commit,
    machine: machineInfo(),
    versions: tools.versions,
    options,
    workers: context.workers,
    schedulingPolicy: process.env.NODE_CLUSTER_SCHED_POLICY || null, // set: svr, node-ceiling and bare-cluster all use it
    certificate: fixtures.certificate ? fixtures.certificate.algorithm : null,
  };
  log(`svr bench: ${context.scenarioList.length} scenarios x ${serverList.length} servers, ${options.runs} x ${options.duration}s runs, files in ${fixtures.root}`);
  const instances = [];
  const cells = [];
  for (const site of SITES) {
    const result = await benchSite(site, context);
    instances.push(...result.instances);
    cells.push(...result.cells);
  }
  const cpuPerRequest = await measureCpuPerRequest(context);
  const accessLogCost = measureAccessLogCost(context, () => nodesFor(options, log));
  meta.machine.loadAverageAtEnd = os.loadavg().map((value) => Number(value.toFixed(2)));
  sortCells(cells, context.scenarioList, serverList);
  const scenarioNames = context.scenarioList.map((scenario) => scenario.name);
  const scenarioLabels = Object.fromEntries(context.scenarioList.filter((scenario) => scenario.label).map((scenario) => [scenario.name, scenario.label]));
  const results = { meta, scenarioLabels, instances, cells, ratios: computeRatios(cells, scenarioNames), blog: computeBlogRatios(cells), cpuPerRequest, accessLogCost };
  console.log(formatReport(results));
  const jsonFile = writeJson(results, options);
  log(`results written to ${jsonFile}`);
  const docs = writeDocs({ jsonFile, options, root: ROOT, log });
  if (docs) log(`chart and table written to ${docs.svg} and ${docs.markdown}`);
  log(`measured commit ${commit.label}`);
  if (options.keep) log(`temp dir kept: ${fixtures.root}`);
}

for (const [signal, exitCode] of [['SIGINT', 130], ['SIGTERM', 143]]) {
  process.on(signal, () => {
    log(`bench: ${signal}, stopping servers`);
    process.exit(exitCode); // the 'exit' handler kills every server started
  });
}

main().catch((err) => {
  log(`bench: ${err.message}`);
  process.exit(1);
});
