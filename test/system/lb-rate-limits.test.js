'use strict';
// One rate limit over three svr hosts behind HAProxy, counted in a real Redis, on real network
// stacks (network namespaces on one bridge; HAProxy and redis-server from Debian's packages).
// A client over the limit, balanced round-robin over the hosts:
//   1. gets the configured rate in all (±10 %), and is refused by every host;
//   2. with Redis stopped, is still limited by every host on its own (rateLimitStore.whenDown
//      "local"): each host lets through the configured rate (±10 %), no more.
// svr sees the client's own address through PROXY protocol v2, so every host keys it the same.
// Traffic stays inside the namespaces made here; they and every process are removed at the end.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { SVR, ensureDebianPackage, makeTempDir } = require('../support/helpers');
const { whyNotNamespaces, createNetwork } = require('../support/netns');

const ID = `svrrl${process.pid % 100000}`;
const ADDRESS = { client: '10.78.0.10', lb: '10.78.0.2', s1: '10.78.0.11', s2: '10.78.0.12', s3: '10.78.0.13', redis: '10.78.0.30' };
const SVR_HOSTS = ['s1', 's2', 's3'];
const LIMIT = { path: '/', rate: 20, burst: 10 };
// 6 lanes pausing 5 ms after each answer: a few hundred requests a second, far over the limit
// on every host, without keeping both cores of a shared machine busy.
const LOAD = { lanes: 6, ms: 4000, pauseMs: 5 };
const CLIENT = path.join(__dirname, '..', 'support', 'rate-client.js');

function svrConfig(dir) {
  const config = {
    port: 80,
    wwwroot: 'web',
    workers: 2,
    acceptProxyProtocol: true,
    trustedProxies: [`${ADDRESS.lb}/32`],
    health: { path: '/healthz' },
    metrics: { path: '/metrics', port: 9100, address: '127.0.0.1' },
    rateLimits: [LIMIT],
    rateLimitStore: { redis: `redis://${ADDRESS.redis}:6379`, timeout: 200 },
  };
  fs.mkdirSync(path.join(dir, 'web'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'web', 'index.html'), 'svr host\n');
  fs.writeFileSync(path.join(dir, 'svr-config.json'), JSON.stringify(config));
  return path.join(dir, 'svr-config.json');
}

function haproxyConfig(dir) {
  const servers = SVR_HOSTS.map((host) => `  server ${host} ${ADDRESS[host]}:80`).join('\n');
  const file = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(file, `global
  maxconn 2000
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  timeout check 500ms
frontend web
  bind ${ADDRESS.lb}:80
  default_backend svr
backend svr
  balance roundrobin
  option httpchk GET /healthz
  http-check expect status 200
  default-server send-proxy-v2 check inter 300ms fall 2 rise 2
${servers}
`);
  return file;
}

function assertRate(passed, elapsedMs, what) {
  const expected = LIMIT.burst + (LIMIT.rate * elapsedMs) / 1000;
  assert.ok(Math.abs(passed - expected) <= expected * 0.1, `${what}: ${passed} requests passed in ${elapsedMs} ms, expected ${expected.toFixed(1)} ± 10 %`);
}

const skip = whyNotNamespaces(ID);
const haproxy = skip ? null : ensureDebianPackage('haproxy');
const redisServer = skip ? null : ensureDebianPackage('redis-server');

test('one rate limit over three hosts behind HAProxy, through Redis; every host still limits with Redis stopped',
  { skip: skip || haproxy.skip || redisServer.skip, timeout: 120000 }, async (t) => {
    const dir = makeTempDir('svr-lbrl-');
    const net = createNetwork(ID, ADDRESS);
    t.after(() => net.close());
    const redis = net.runIn('redis', redisServer.path, ['--bind', ADDRESS.redis, '--port', '6379', '--protected-mode', 'no', '--save', '', '--appendonly', 'no', '--dir', dir]);
    await redis.waitFor(/Ready to accept connections/);
    const svr = {};
    await Promise.all(SVR_HOSTS.map(async (host) => {
      svr[host] = net.runIn(host, process.execPath, [SVR, '--config', svrConfig(path.join(dir, host))]);
      await svr[host].waitFor(/listening on /);
    }));
    net.runIn('lb', haproxy.path, ['-db', '-f', haproxyConfig(dir)]);
    net.waitForPort('client', ADDRESS.lb, 80);

    // Per host: [limited requests that passed, refused] so far, from its metrics.
    const counts = (host) => {
      const script = "require('http').get('http://127.0.0.1:9100/metrics', (r) => { r.setEncoding('utf8'); let t = ''; r.on('data', (c) => { t += c; }); r.on('end', () => process.stdout.write(t)); })";
      const text = net.run(host, process.execPath, ['-e', script]).stdout;
      const value = (name) => Number((text.split('\n').find((l) => l.startsWith(`${name} `)) || ' 0').split(' ').pop());
      return [value('svr_http_requests_total{method="GET",status="2xx"}'), value('svr_rate_limited_requests_total{rule="/",outcome="refused"}')];
    };
    const load = async () => {
      const before = Object.fromEntries(SVR_HOSTS.map((host) => [host, counts(host)]));
      const client = net.runIn('client', process.execPath, [CLIENT, `http://${ADDRESS.lb}/`, String(LOAD.lanes), String(LOAD.ms), String(LOAD.pauseMs)]);
      const result = JSON.parse(await client.waitFor(/^\{/, 0, 30000));
      const perHost = Object.fromEntries(SVR_HOSTS.map((host) => {
        const [passed, refused] = counts(host);
        return [host, { passed: passed - before[host][0], refused: refused - before[host][1] }];
      }));
      t.diagnostic(`${JSON.stringify({ statuses: result.statuses, errors: result.errors, elapsedMs: result.elapsedMs, perHost })}`);
      return { result, perHost };
    };

    await t.test('Redis up: the configured rate over all hosts, refused on every host', async () => {
      const { result, perHost } = await load();
      assert.equal(result.errors, 0);
      assertRate(result.statuses[200] || 0, result.elapsedMs, 'over three hosts');
      for (const host of SVR_HOSTS) assert.ok(perHost[host].refused > 0 && perHost[host].passed > 0, `${host} served and refused: ${JSON.stringify(perHost[host])}`);
    });

    await t.test('Redis stopped: every host limits on its own', async () => {
      redis.child.kill('SIGTERM');
      await redis.exited;
      await Promise.all(SVR_HOSTS.map((host) => svr[host].waitFor(/rate limits: Redis at .* is unreachable/)));
      const { result, perHost } = await load();
      assert.equal(result.errors, 0);
      for (const host of SVR_HOSTS) {
        assertRate(perHost[host].passed, result.elapsedMs, `${host} alone`);
        assert.ok(perHost[host].refused > 0, `${host} refused`);
      }
    });
  });
