'use strict';
// svr behind a real load balancer, on real network stacks: network namespaces as hosts on one
// bridge. HAProxy (Debian's package) balances three svr hosts with PROXY protocol v2 and svr's
// health path; each svr proxies /app/ to one application backend (HTTP route + WebSocket echo).
// From a client namespace, under bounded load, it shows:
//   1. requests and WebSocket echoes work end to end; the backend (X-Forwarded-For) and svr's
//      access log see the client's own address; the metrics count exactly what the client sent;
//   2. a rolling restart of the three svr hosts (SIGTERM, health 503 during drainDelay, restart)
//      loses no request;
//   3. SIGKILL of one host loses at most the requests in flight, and HAProxy's health check
//      takes it out within fall x inter (+ the check timeout).
// Traffic stays inside the namespaces made here (10.77.0.0/24 exists only there); all of them,
// and every process started, are removed at the end.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { SVR, ensureDebianPackage, makeTempDir } = require('../support/helpers');
const { whyNotNamespaces, createNetwork } = require('../support/netns');

const ID = `svrlb${process.pid % 100000}`;
const ADDRESS = { client: '10.77.0.10', lb: '10.77.0.2', s1: '10.77.0.11', s2: '10.77.0.12', s3: '10.77.0.13', app: '10.77.0.20' };
const SVR_HOSTS = ['s1', 's2', 's3'];
const CHECK = { interMs: 300, fall: 2, rise: 2, timeoutMs: 500 };
const DRAIN_DELAY_MS = 1500; // > fall x inter: HAProxy sees 503 twice before svr stops accepting
const SUPPORT = path.join(__dirname, '..', 'support', 'lb');

let network = null; // createNetwork's: the hosts, and what runs on them
const runIn = (...args) => network.runIn(...args);

function svrConfig(dir) {
  const config = {
    port: 80,
    wwwroot: 'web',
    workers: 1,
    acceptProxyProtocol: true,
    trustedProxies: [`${ADDRESS.lb}/32`],
    health: { path: '/healthz', drainDelay: DRAIN_DELAY_MS },
    metrics: { path: '/metrics', port: 9100, address: '127.0.0.1' },
    proxy: [{ path: '/app/', upstreams: [`http://${ADDRESS.app}:8080`], stripPrefix: true }],
  };
  fs.mkdirSync(path.join(dir, 'web'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'web', 'index.html'), 'svr host\n');
  fs.writeFileSync(path.join(dir, 'svr-config.json'), JSON.stringify(config));
  return path.join(dir, 'svr-config.json');
}

function haproxyConfig(dir) {
  const { interMs, fall, rise, timeoutMs } = CHECK;
  const servers = SVR_HOSTS.map((host) => `  server ${host} ${ADDRESS[host]}:80`).join('\n');
  const text = `global
  log stdout format raw local0 notice
  maxconn 2000
defaults
  mode http
  log global
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  timeout tunnel 30s
  timeout check ${timeoutMs}ms
  retries 3
  option redispatch
  retry-on conn-failure empty-response response-timeout
frontend web
  bind ${ADDRESS.lb}:80
  default_backend svr
backend svr
  balance roundrobin
  option httpchk GET /healthz
  http-check expect status 200
  default-server send-proxy-v2 check inter ${interMs}ms fall ${fall} rise ${rise}
${servers}
`;
  const file = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(file, text);
  return file;
}

async function startSvr(host, configFile) {
  const proc = runIn(host, process.execPath, [SVR, '--config', configFile]);
  await proc.waitFor(/listening on /);
  return proc;
}

// The Prometheus text of one host's svr, fetched inside its namespace.
function scrape(host) {
  const script = "require('http').get('http://127.0.0.1:9100/metrics', (r) => { r.setEncoding('utf8'); let t = ''; r.on('data', (c) => { t += c; }); r.on('end', () => process.stdout.write(t)); })";
  const result = network.run(host, process.execPath, ['-e', script], { timeout: 10000 });
  return result.stdout;
}

function metric(text, name) {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}

// 4 lanes, each pausing 4 ms after an answer: a request every ~1-2 ms reaches HAProxy all through a
// restart (so every drain and failover happens under load), without the unpaced lanes' ~3,000
// requests/s that kept both cores of a shared test machine busy for the whole test.
const LOAD = { lanes: 4, maxRequests: 20000, maxMs: 45000, pauseMs: 4 };

async function runLoad(during) {
  const client = runIn('client', process.execPath, [path.join(SUPPORT, 'client.js'), 'load', `http://${ADDRESS.lb}`,
    String(LOAD.lanes), String(LOAD.maxRequests), String(LOAD.maxMs), String(LOAD.pauseMs)], { stdin: 'pipe' });
  await client.waitFor(/^started$/);
  const figures = await during();
  client.child.stdin.write('stop\n');
  const summary = JSON.parse(await client.waitFor(/^\{/, 0, 20000));
  return { summary, ...figures };
}

const skip = whyNotNamespaces(ID);
const haproxy = skip ? null : ensureDebianPackage('haproxy');

test('svr behind HAProxy in network namespaces', { skip: skip || haproxy.skip, timeout: 120000 }, async (t) => {
  const dir = makeTempDir('svr-lb-');
  t.after(() => {
    if (network) network.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  network = createNetwork(ID, ADDRESS);
  runIn('app', process.execPath, [path.join(SUPPORT, 'backend.js'), ADDRESS.app, '8080']);
  const svr = {};
  const configs = {};
  for (const host of SVR_HOSTS) {
    configs[host] = svrConfig(path.join(dir, host));
    svr[host] = await startSvr(host, configs[host]);
  }
  const lb = runIn('lb', haproxy.path, ['-db', '-f', haproxyConfig(dir)]);
  network.waitForPort('client', ADDRESS.lb, 80);
  const lbEvent = (host, state, since) => lb.waitFor(new RegExp(`Server svr/${host} is ${state}`), since, 20000);

  await t.test('requests and WebSocket echoes pass; backend, access log and metrics see the client', async () => {
    const REQUESTS = 60;
    const SESSIONS = 5;
    const basic = runIn('client', process.execPath, [path.join(SUPPORT, 'client.js'), 'basic', `http://${ADDRESS.lb}`, String(REQUESTS), String(SESSIONS)]);
    const result = JSON.parse(await basic.waitFor(/^\{/, 0, 30000));
    t.diagnostic(`basic: ${JSON.stringify(result)}`);
    assert.deepEqual(result, { ok: REQUESTS, failed: 0, xff: [ADDRESS.client], ws: SESSIONS });
    // A tunnel's line is written when svr sees it close, a moment after the client did.
    const appLines = () => SVR_HOSTS.flatMap((host) => svr[host].lines.filter((line) => / "GET \/app\//.test(line)));
    for (let i = 0; i < 20 && appLines().length < REQUESTS + SESSIONS; i++) {
      await Promise.race(SVR_HOSTS.map((host) => svr[host].waitFor(/./, svr[host].lines.length, 5000).catch(() => {})));
    }
    const logged = appLines();
    assert.equal(logged.length, REQUESTS + SESSIONS);
    assert.ok(logged.every((line) => line.startsWith(`${ADDRESS.client} - - [`)), logged.find((line) => !line.startsWith(ADDRESS.client)));
    assert.ok(!SVR_HOSTS.some((host) => svr[host].lines.some((line) => line.includes('/healthz'))), 'health checks are not logged');
    const texts = SVR_HOSTS.map(scrape);
    const sum = (name) => texts.reduce((total, text) => total + metric(text, name), 0);
    assert.equal(sum('svr_http_requests_total{method="GET",status="2xx"}'), REQUESTS);
    assert.equal(sum('svr_http_requests_total{method="GET",status="1xx"}'), SESSIONS);
    assert.equal(texts.filter((text) => metric(text, `svr_proxy_upstream_up{upstream="http://${ADDRESS.app}:8080"}`) === 1).length, 3);
  });

  await t.test('a rolling restart of the three svr hosts loses no request', async () => {
    const { summary, restarts } = await runLoad(async () => {
      const times = [];
      for (const host of SVR_HOSTS) {
        const since = lb.lines.length;
        const began = Date.now();
        svr[host].child.kill('SIGTERM');
        const down = await lbEvent(host, 'DOWN', since);
        assert.match(down, /503/, 'taken out because its health path answered 503');
        const { code } = await svr[host].exited;
        assert.equal(code, 0);
        svr[host] = await startSvr(host, configs[host]);
        await lbEvent(host, 'UP', since);
        times.push(Date.now() - began);
      }
      return { restarts: times };
    });
    t.diagnostic(`rolling restart: ${JSON.stringify(summary)}; per host ${restarts.join(', ')} ms`);
    assert.ok(summary.ok > 100, `only ${summary.ok} requests completed`);
    assert.equal(summary.failed, 0, JSON.stringify(summary.failures));
  });

  await t.test('SIGKILL of one host loses at most the requests in flight; HAProxy takes it out within fall x inter', async () => {
    const { summary, failoverMs } = await runLoad(async () => {
      const since = lb.lines.length;
      // Some load first, so requests are in flight on every host.
      await svr.s2.waitFor(/"GET \/app\/whoami/, svr.s2.lines.length, 10000);
      const killedAt = Date.now();
      process.kill(-svr.s2.child.pid, 'SIGKILL');
      await lbEvent('s2', 'DOWN', since);
      const failover = Date.now() - killedAt;
      // Load on the two remaining hosts for a moment after the failover.
      await svr.s1.waitFor(/"GET \/app\/whoami/, svr.s1.lines.length, 10000);
      return { failoverMs: failover };
    });
    t.diagnostic(`SIGKILL: ${JSON.stringify(summary)}; HAProxy took it out after ${failoverMs} ms`);
    const limit = CHECK.fall * CHECK.interMs + CHECK.timeoutMs + CHECK.interMs;
    assert.ok(failoverMs <= limit, `failover took ${failoverMs} ms (limit ${limit})`);
    assert.ok(summary.failed <= 4, `${summary.failed} failed, more than the 4 in flight: ${JSON.stringify(summary.failures)}`);
    assert.ok(summary.ok > 0);
  });
});
