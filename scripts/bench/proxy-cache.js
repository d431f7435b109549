'use strict';
// `npm run bench -- proxycache`: a cached proxied page against svr's own static file of the same
// size and against nginx's proxy_cache. One backend (an nginx serving a 1 KiB file with
// Cache-Control: max-age=600); svr serves the file itself under /static/ and proxies /cached/ to
// the backend with "cache": true; an nginx proxies to it with proxy_cache. Every cache is warmed
// first (each answer is then a hit), access logs on, the same worker count. wrk runs against each
// in turn (--runs times, alternating); prints the medians of requests/s and the ratios cached /
// static and svr / nginx. Options: --duration S --runs N --connections N --workers N.
const fs = require('fs');
const os = require('os');
const path = require('path');
const minimist = require('minimist');
const { ensureTools, ROOT } = require('./tools');
const { freePort, startProcess, stopProcess, killAllStarted, fetchOnce } = require('./processes');
const { runWrk } = require('./wrk');

const { nginxConf: buildNginxConf } = require('./nginx-conf');

const HOST = '127.0.0.1';

const nginxConf = (prefix, workers, body) => buildNginxConf({ prefix, workers, body, by: 'proxy-cache.js' });

function writeConf(dir, name, text) {
  const prefix = path.join(dir, name);
  fs.mkdirSync(prefix, { recursive: true });
  fs.writeFileSync(path.join(prefix, 'nginx.conf'), text(prefix));
  return { prefix, conf: path.join(prefix, 'nginx.conf') };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function runProxyCacheBench(argv, log = (line) => process.stderr.write(`${line}\n`)) {
  const args = minimist(argv, { default: { duration: 5, runs: 3, connections: 32, workers: 0, warmup: 2 } });
  const workers = Number(args.workers) || (os.availableParallelism ? os.availableParallelism() : os.cpus().length);
  const tools = ensureTools({ install: true }, log);
  if (!tools.wrk || !tools.nginx) throw new Error('the proxy-cache bench needs wrk and nginx (apt-get install wrk nginx)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-bench-proxycache-'));
  process.on('exit', () => { killAllStarted(); fs.rmSync(dir, { recursive: true, force: true }); });
  const root = path.join(dir, 'www');
  fs.mkdirSync(path.join(root, 'cached'), { recursive: true });
  fs.writeFileSync(path.join(root, 'cached', 'item.json'), 'x'.repeat(1024));

  const backendPort = await freePort();
  const backend = writeConf(dir, 'backend', (prefix) => nginxConf(prefix, 1, `  access_log off;
  server { listen ${HOST}:${backendPort}; root ${root}; keepalive_requests 100000; add_header Cache-Control "public, max-age=600"; }`));
  const started = [await startProcess({ command: tools.nginx, args: ['-p', backend.prefix, '-c', backend.conf], logFile: path.join(dir, 'backend.log'), readyUrl: `http://${HOST}:${backendPort}/cached/item.json` })];

  const nginxPort = await freePort();
  const nginx = writeConf(dir, 'nginx', (prefix) => nginxConf(prefix, workers, `  access_log ${prefix}/access.log combined;
  proxy_cache_path ${prefix}/cache levels=1:2 keys_zone=svrbench:10m max_size=256m;
  upstream app { server ${HOST}:${backendPort}; keepalive 64; }
  server {
    listen ${HOST}:${nginxPort};
    location / {
      proxy_pass http://app;
      proxy_cache svrbench;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      add_header X-Cache $upstream_cache_status;
    }
  }`));
  started.push(await startProcess({ command: tools.nginx, args: ['-p', nginx.prefix, '-c', nginx.conf], logFile: path.join(dir, 'nginx.log'), readyUrl: `http://${HOST}:${nginxPort}/cached/item.json` }));

  const svrPort = await freePort();
  const svrDir = path.join(dir, 'svr');
  fs.mkdirSync(path.join(svrDir, 'web', 'static'), { recursive: true });
  fs.writeFileSync(path.join(svrDir, 'web', 'static', 'item.json'), 'x'.repeat(1024));
  const configFile = path.join(svrDir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ port: svrPort, wwwroot: 'web', workers, enableLogging: true, stateDirectory: 'state',
    proxy: [{ path: '/cached/', upstreams: [`http://${HOST}:${backendPort}`], cache: true }] }, null, 2));
  started.push(await startProcess({ command: process.execPath, args: [path.join(ROOT, 'svr.js'), '--config', configFile], cwd: svrDir, logFile: path.join(dir, 'svr.log'), readyUrl: `http://${HOST}:${svrPort}/static/item.json` }));

  const targets = [
    { name: 'svr static', url: `http://${HOST}:${svrPort}/static/item.json` },
    { name: 'svr cached', url: `http://${HOST}:${svrPort}/cached/item.json` },
    { name: 'nginx proxy_cache', url: `http://${HOST}:${nginxPort}/cached/item.json` },
  ];
  for (const target of targets) {
    for (let i = 0; i < 4; i++) await fetchOnce(target.url); // stored, then in each worker's memory
    const check = await fetchOnce(target.url);
    if (target.name !== 'svr static' && !/HIT/.test(String(check.headers && check.headers['x-cache']))) log(`  ${target.name}: not a cache hit after warming (${check.headers && check.headers['x-cache']})`);
  }
  const results = Object.fromEntries(targets.map((target) => [target.name, []]));
  const request = (url, seconds) => ({ wrk: tools.wrk, url, seconds, threads: 1, connections: Number(args.connections) });
  log(`proxy-cache bench: ${args.runs} x ${args.duration}s, ${args.connections} connections, ${workers} workers, load average ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`);
  for (const target of targets) if (args.warmup > 0) await runWrk(request(target.url, Number(args.warmup)));
  for (let round = 0; round < Number(args.runs); round++) {
    for (const target of targets) {
      const run = await runWrk(request(target.url, Number(args.duration)));
      if (run.failure) throw new Error(`${target.name}: ${run.failure}`);
      results[target.name].push(run.rps);
      log(`  ${target.name} run ${round + 1}: ${Math.round(run.rps)} req/s, ${run.errors} errors`);
    }
  }
  const rps = Object.fromEntries(Object.entries(results).map(([name, runs]) => [name, Math.round(median(runs))]));
  console.log(`proxy cache (1 KiB, every answer a hit, access logs on, ${workers} workers, ${args.connections} connections)`);
  for (const [name, value] of Object.entries(rps)) console.log(`  ${name.padEnd(18)} ${value} req/s`);
  console.log(`  svr cached / svr static ${(rps['svr cached'] / rps['svr static']).toFixed(2)}; svr cached / nginx proxy_cache ${(rps['svr cached'] / rps['nginx proxy_cache']).toFixed(2)}; load average at end ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`);
  for (const proc of started.reverse()) await stopProcess(proc.proc);
  return rps;
}

module.exports = { runProxyCacheBench };
