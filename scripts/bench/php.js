'use strict';
// `npm run bench -- php`: PHP through svr's `fastcgi`, nginx's fastcgi_pass and Caddy's
// php_fastcgi, all three in front of the same PHP-FPM pool (one pool on a Unix socket, pm static,
// opcache on as Debian ships it), with their access logs on and the same worker count. Two pages:
// a PHP hello world, and the front page of Debian's WordPress (with a MariaDB the bench starts,
// installed through WordPress's own web installer once, before measuring).
// A fourth target, "svr cached", is svr with `"cache": true` on its fastcgi rule; WordPress sends
// no lifetime for its pages, so a must-use plugin the bench writes (CACHE_PLUGIN) gives visitors
// who are not logged in `Cache-Control: public, max-age=60`, as a site owner would (the other
// servers get the header too and do not cache).
// wrk runs against each server in turn (alternating, --runs times); the medians of requests/s
// and p99 are printed with the ratios to nginx. Options: --duration S --runs N --connections N
// --workers N (svr and nginx workers; default: available cores) --children N (PHP-FPM's).
// Needs root (WordPress, MariaDB and PHP-FPM are installed when missing, as the tests do).
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const minimist = require('minimist');
const { ensureTools, ROOT } = require('./tools');
const { freePort, startProcess, stopProcess, killAllStarted } = require('./processes');
const { runWrk } = require('./wrk');
const { startPhpFpm } = require('../../test/support/php-fpm');
const { ensureWordPress, copyWordPress, startMariadb, Browser, installThroughWeb } = require('../../test/support/wordpress');
const { request } = require('../../test/support/helpers');

const { nginxConf: buildNginxConf } = require('./nginx-conf');

const HOST = '127.0.0.1';

// What a WordPress site needs before any shared cache may keep its pages: a lifetime for
// anonymous visitors (logged-in ones send cookies, which svr's cache never answers).
const CACHE_PLUGIN = `<?php
add_action('send_headers', function () {
  if (!is_user_logged_in()) header('Cache-Control: public, max-age=60');
});
`;

function nginxConf({ prefix, port, workers, root, socket }) {
  return buildNginxConf({ prefix, workers, by: 'php.js', body: `  include /etc/nginx/mime.types;
  access_log ${prefix}/access.log combined;
  # Kept-alive connections hold PHP-FPM children: idle ones are closed as soon as svr's are (200 ms).
  upstream php { server unix:${socket}; keepalive 16; keepalive_timeout 200ms; }
  server {
    listen ${HOST}:${port};
    root ${root};
    index index.php index.html;
    location / { try_files $uri $uri/ /index.php?$args; }
    location ~ \\.php$ {
      try_files $uri =404;
      fastcgi_split_path_info ^(.+\\.php)(/.+)$;
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;
      fastcgi_param PATH_INFO $fastcgi_path_info;
      fastcgi_keep_conn on;
      fastcgi_pass php;
    }
  }` });
}

function caddyfile({ port, root, socket, logFile }) {
  return `{
  admin off
  auto_https off
}
http://${HOST}:${port} {
  root * ${root}
  php_fastcgi unix/${socket}
  file_server
  log {
    output file ${logFile}
  }
}
`;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function ensureCaddy(log) {
  const found = () => spawnSync('sh', ['-c', 'command -v caddy'], { encoding: 'utf8' }).stdout.trim();
  if (!found() && process.getuid() === 0) {
    log('installing caddy (apt-get install caddy)');
    spawnSync('apt-get', ['-o', 'DPkg::Lock::Timeout=300', 'install', '-y', '-q', '--no-install-recommends', 'caddy'], { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  }
  return found() || null;
}

async function runPhpBench(argv, log = (line) => process.stderr.write(`${line}\n`)) {
  const args = minimist(argv, { default: { duration: 5, runs: 3, connections: 32, workers: 0, children: 0, warmup: 2 } });
  const cores = os.availableParallelism ? os.availableParallelism() : os.cpus().length;
  const workers = Number(args.workers) || cores;
  const tools = ensureTools({ install: true }, log);
  if (!tools.wrk || !tools.nginx) throw new Error('the php bench needs wrk and nginx (apt-get install wrk nginx)');
  const ready = ensureWordPress();
  if (ready.skip) throw new Error(`the php bench needs WordPress: ${ready.skip}`);
  const caddy = ensureCaddy(log);

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-bench-php-'));
  const started = [];
  const stops = [];
  process.on('exit', () => { killAllStarted(); fs.rmSync(dir, { recursive: true, force: true }); });
  try {
    return await measure({ args, cores, workers, tools, caddy, dir, started, stops, log });
  } finally { // MariaDB and PHP-FPM are not the bench's started processes: stop them on failure too
    for (const proc of started.reverse()) await stopProcess(proc.proc);
    for (const stop of stops.reverse()) await stop();
  }
}

async function measure({ args, cores, workers, tools, caddy, dir, started, stops, log }) {
  const site = copyWordPress(dir);
  fs.writeFileSync(path.join(site, 'hello.php'), '<?php echo "Hello, world!\\n";');
  const db = await startMariadb(dir);
  stops.push(() => db.stop());
  const fpm = await startPhpFpm({ maxChildren: Number(args.children) || cores * 2 });
  if (fpm.skip) throw new Error(fpm.skip);
  stops.push(() => fpm.stop());

  const svrPort = await freePort();
  const svrDir = path.join(dir, 'svr');
  fs.mkdirSync(svrDir);
  const configFile = path.join(svrDir, 'svr-config.json');
  const rule = { upstream: fpm.upstream };
  if (args['keep-alive'] !== undefined) rule.timeouts = { keepAlive: Number(args['keep-alive']) }; // --keep-alive MS: the rule's timeouts.keepAlive
  fs.writeFileSync(configFile, JSON.stringify({ port: svrPort, wwwroot: site, workers, enableLogging: true, fastcgi: [rule] }, null, 2));
  started.push(await startProcess({ command: process.execPath, args: [path.join(ROOT, 'svr.js'), '--config', configFile], cwd: svrDir, logFile: path.join(dir, 'svr.log'), readyUrl: `http://${HOST}:${svrPort}/hello.php` }));

  // WordPress is installed once, through svr. Its home URL then follows the Host each server
  // passes on (nginx's Debian fastcgi_params pass it without the port), so that no server's
  // requests are redirected to another's address.
  const steps = await installThroughWeb(new Browser(`http://${HOST}:${svrPort}`), db.socket);
  if (!/Success!/.test(steps.site.text)) throw new Error('the WordPress installer did not finish');
  const wpConfig = path.join(site, 'wp-config.php');
  fs.writeFileSync(wpConfig, fs.readFileSync(wpConfig, 'utf8').replace('<?php', "<?php\ndefine('WP_HOME', 'http://' . $_SERVER['HTTP_HOST']);\ndefine('WP_SITEURL', WP_HOME);"));

  fs.mkdirSync(path.join(site, 'wp-content', 'mu-plugins'), { recursive: true });
  fs.writeFileSync(path.join(site, 'wp-content', 'mu-plugins', 'svr-cache-headers.php'), CACHE_PLUGIN, { mode: 0o644 });
  const cachedPort = await freePort();
  const cachedDir = path.join(dir, 'svr-cached');
  fs.mkdirSync(cachedDir);
  const cachedConfig = path.join(cachedDir, 'svr-config.json');
  fs.writeFileSync(cachedConfig, JSON.stringify({ port: cachedPort, wwwroot: site, workers, enableLogging: true, stateDirectory: path.join(cachedDir, 'state'), fastcgi: [{ ...rule, cache: true }] }, null, 2));
  started.push(await startProcess({ command: process.execPath, args: [path.join(ROOT, 'svr.js'), '--config', cachedConfig], cwd: cachedDir, logFile: path.join(dir, 'svr-cached.log'), readyUrl: `http://${HOST}:${cachedPort}/hello.php` }));

  const nginxPort = await freePort();
  const nginxPrefix = path.join(dir, 'nginx');
  fs.mkdirSync(nginxPrefix);
  fs.writeFileSync(path.join(nginxPrefix, 'nginx.conf'), nginxConf({ prefix: nginxPrefix, port: nginxPort, workers, root: site, socket: fpm.socket }));
  started.push(await startProcess({ command: tools.nginx, args: ['-p', nginxPrefix, '-c', path.join(nginxPrefix, 'nginx.conf')], logFile: path.join(dir, 'nginx.log'), readyUrl: `http://${HOST}:${nginxPort}/hello.php` }));
  const targets = [{ name: 'svr', port: svrPort }, { name: 'svr cached', port: cachedPort }, { name: 'nginx', port: nginxPort }];

  if (caddy) {
    const caddyPort = await freePort();
    const file = path.join(dir, 'Caddyfile');
    fs.writeFileSync(file, caddyfile({ port: caddyPort, root: site, socket: fpm.socket, logFile: path.join(dir, 'caddy-access.log') }));
    // GOMAXPROCS: Caddy's threads, as the others' workers.
    started.push(await startProcess({ command: caddy, args: ['run', '--config', file, '--adapter', 'caddyfile'], env: { ...process.env, GOMAXPROCS: String(workers), HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir }, logFile: path.join(dir, 'caddy.log'), readyUrl: `http://${HOST}:${caddyPort}/hello.php` }));
    targets.push({ name: 'caddy', port: caddyPort });
  } else {
    log('caddy is not installed: measuring svr and nginx only');
  }

  const pages = [{ name: 'hello', path: '/hello.php', expect: /Hello, world!/ }, { name: 'wordpress', path: '/', expect: /svr WordPress/ }];
  for (const page of pages) {
    for (const target of targets) {
      const res = await request(`http://${HOST}:${target.port}${page.path}`, { timeout: 30000 }).catch((error) => {
        throw new Error(`${target.name} ${page.path}: ${error.message}`);
      });
      if (res.status !== 200 || !page.expect.test(res.text)) throw new Error(`${target.name} ${page.path}: ${res.status} ${res.headers.location || ''} ${res.text.slice(0, 200)}`);
    }
  }

  // The cached target must answer the front page from its cache (it is stored as its first answer ends).
  let xCache = '';
  for (let i = 0; i < 50 && xCache !== 'HIT'; i++) xCache = (await request(`http://${HOST}:${cachedPort}/`)).headers['x-cache'];
  if (xCache !== 'HIT') throw new Error(`svr cached: the WordPress front page is not answered from the cache (X-Cache: ${xCache})`);

  const load = () => os.loadavg().map((v) => v.toFixed(2)).join(' ');
  log(`php bench: ${args.runs} x ${args.duration}s, ${args.connections} connections, ${workers} workers, PHP-FPM ${Number(args.children) || cores * 2} children, load average ${load()}`);
  const results = {};
  for (const page of pages) {
    results[page.name] = Object.fromEntries(targets.map((t) => [t.name, []]));
    const run = (target, seconds) => runWrk({ wrk: tools.wrk, url: `http://${HOST}:${target.port}${page.path}`, seconds, threads: 1, connections: Number(args.connections) });
    for (const target of targets) if (args.warmup > 0) await run(target, Number(args.warmup));
    for (let round = 0; round < Number(args.runs); round++) {
      for (const target of targets) {
        const result = await run(target, Number(args.duration));
        if (result.failure) throw new Error(`${target.name} ${page.name}: ${result.failure}`);
        results[page.name][target.name].push(result);
        log(`  ${page.name} ${target.name} run ${round + 1}: ${Math.round(result.rps)} req/s, p99 ${result.latencyMs.p99.toFixed(2)} ms, ${result.errors} errors`);
      }
    }
  }

  const summary = {};
  console.log(`php (PHP-FPM on a Unix socket, keep-alive, access logs on, ${workers} workers; machine load average at end ${load()})`);
  console.log('| page | server | req/s | p99 ms | errors | req/s vs nginx | p99 vs nginx |');
  console.log('|---|---|---:|---:|---:|---:|---:|');
  for (const page of pages) {
    summary[page.name] = {};
    for (const target of targets) {
      const runs = results[page.name][target.name];
      summary[page.name][target.name] = { rps: Math.round(median(runs.map((r) => r.rps))), p99Ms: Number(median(runs.map((r) => r.latencyMs.p99)).toFixed(2)), errors: runs.reduce((sum, r) => sum + r.errors, 0) };
    }
    const nginx = summary[page.name].nginx;
    for (const target of targets) {
      const s = summary[page.name][target.name];
      console.log(`| ${page.name} | ${target.name} | ${s.rps} | ${s.p99Ms} | ${s.errors} | ${(s.rps / nginx.rps).toFixed(2)} | ${(s.p99Ms / nginx.p99Ms).toFixed(2)} |`);
    }
  }
  for (const page of pages) {
    const { svr, 'svr cached': cached } = summary[page.name];
    console.log(`${page.name}: svr cached / svr = ${(cached.rps / svr.rps).toFixed(2)}x requests/s`);
  }
  return summary;
}

module.exports = { runPhpBench };
