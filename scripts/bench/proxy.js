'use strict';
// `npm run bench -- proxy`: svr's reverse proxy against nginx's proxy_pass, both in front of the
// same backend (an nginx serving a 1 KiB file, so the backend is not what limits them), both
// with their access log on and keep-alive connections to the backend, the same worker count.
// wrk runs against each in turn (alternating, --runs times); the medians of requests/s and p99
// are printed with the ratio svr / nginx. Options: --duration S --runs N --connections N
// --workers N (svr and nginx workers; default: available cores).
const fs = require('fs');
const os = require('os');
const path = require('path');
const minimist = require('minimist');
const { ensureTools, ROOT } = require('./tools');
const { freePort, startProcess, stopProcess, killAllStarted } = require('./processes');
const { runWrk } = require('./wrk');

const { nginxConf: buildNginxConf } = require('./nginx-conf');

const HOST = '127.0.0.1';
const BODY = 'x'.repeat(1024);

const nginxConf = (options) => buildNginxConf({ ...options, by: 'proxy.js' });

function backendConf(prefix, port, root) {
  return nginxConf({ prefix, workers: 1, body: `  access_log off;
  server { listen ${HOST}:${port}; root ${root}; keepalive_requests 100000; }` });
}

function nginxProxyConf(prefix, port, backendPort, workers) {
  return nginxConf({ prefix, workers, body: `  access_log ${prefix}/access.log combined;
  upstream app { server ${HOST}:${backendPort}; keepalive 64; }
  server {
    listen ${HOST}:${port};
    location / {
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
    }
  }` });
}

function writeNginx(dir, name, text) {
  const prefix = path.join(dir, name);
  fs.mkdirSync(prefix, { recursive: true });
  const conf = path.join(prefix, 'nginx.conf');
  fs.writeFileSync(conf, text);
  return { prefix, conf };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function runProxyBench(argv, log = (line) => process.stderr.write(`${line}\n`)) {
  const args = minimist(argv, { default: { duration: 5, runs: 3, connections: 32, workers: 0, warmup: 2 } });
  const workers = Number(args.workers) || (os.availableParallelism ? os.availableParallelism() : os.cpus().length);
  const tools = ensureTools({ install: true }, log);
  if (!tools.wrk || !tools.nginx) throw new Error('the proxy bench needs wrk and nginx (apt-get install wrk nginx)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-bench-proxy-'));
  process.on('exit', () => { killAllStarted(); fs.rmSync(dir, { recursive: true, force: true }); });
  const root = path.join(dir, 'www');
  fs.mkdirSync(root);
  fs.writeFileSync(path.join(root, 'item.json'), BODY);

  const backendPort = await freePort();
  const backend = writeNginx(dir, 'backend', backendConf(path.join(dir, 'backend'), backendPort, root));
  const started = [await startProcess({ command: tools.nginx, args: ['-p', backend.prefix, '-c', backend.conf], logFile: path.join(dir, 'backend.log'), readyUrl: `http://${HOST}:${backendPort}/item.json` })];

  const nginxPort = await freePort();
  const proxyNginx = writeNginx(dir, 'nginx', nginxProxyConf(path.join(dir, 'nginx'), nginxPort, backendPort, workers));
  started.push(await startProcess({ command: tools.nginx, args: ['-p', proxyNginx.prefix, '-c', proxyNginx.conf], logFile: path.join(dir, 'nginx.log'), readyUrl: `http://${HOST}:${nginxPort}/item.json` }));

  const svrPort = await freePort();
  const svrDir = path.join(dir, 'svr');
  fs.mkdirSync(path.join(svrDir, 'web'), { recursive: true });
  const configFile = path.join(svrDir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ port: svrPort, wwwroot: 'web', workers, enableLogging: true, proxy: [{ path: '/', upstreams: [`http://${HOST}:${backendPort}`] }] }, null, 2));
  started.push(await startProcess({ command: process.execPath, args: [path.join(ROOT, 'svr.js'), '--config', configFile], cwd: svrDir, logFile: path.join(dir, 'svr.log'), readyUrl: `http://${HOST}:${svrPort}/item.json` }));

  const targets = [{ name: 'svr', port: svrPort }, { name: 'nginx', port: nginxPort }];
  const results = { svr: [], nginx: [] };
  const request = (port, seconds) => ({ wrk: tools.wrk, url: `http://${HOST}:${port}/item.json`, seconds, threads: 1, connections: Number(args.connections) });
  log(`proxy bench: ${args.runs} x ${args.duration}s, ${args.connections} connections, ${workers} workers, load average ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`);
  for (const target of targets) if (args.warmup > 0) await runWrk(request(target.port, Number(args.warmup)));
  for (let round = 0; round < Number(args.runs); round++) {
    for (const target of targets) {
      const run = await runWrk(request(target.port, Number(args.duration)));
      if (run.failure) throw new Error(`${target.name}: ${run.failure}`);
      results[target.name].push(run);
      log(`  ${target.name} run ${round + 1}: ${Math.round(run.rps)} req/s, p99 ${run.latencyMs.p99.toFixed(2)} ms, ${run.errors} errors`);
    }
  }
  const summary = {};
  for (const name of Object.keys(results)) {
    summary[name] = { rps: Math.round(median(results[name].map((r) => r.rps))), p99Ms: Number(median(results[name].map((r) => r.latencyMs.p99)).toFixed(2)), errors: results[name].reduce((sum, r) => sum + r.errors, 0) };
  }
  const ratio = summary.svr.rps / summary.nginx.rps;
  console.log(`proxy (1 KiB from an nginx backend, keep-alive, access log on, ${workers} workers)`);
  console.log(`  svr    ${summary.svr.rps} req/s  p99 ${summary.svr.p99Ms} ms  errors ${summary.svr.errors}`);
  console.log(`  nginx  ${summary.nginx.rps} req/s  p99 ${summary.nginx.p99Ms} ms  errors ${summary.nginx.errors}`);
  console.log(`  svr/nginx requests/s ${ratio.toFixed(2)}; load average at end ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`);
  for (const proc of started.reverse()) await stopProcess(proc.proc);
  return { summary, ratio };
}

module.exports = { runProxyBench, backendConf, nginxProxyConf, writeNginx };
