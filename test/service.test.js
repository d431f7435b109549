'use strict';
// install.sh, systemd/svr.service and scripts/uninstall.sh in a real booted systemd: a Debian
// bookworm guest (Node 18) under systemd-nspawn, driven with nsenter. Runs as root only; the guest
// root is cached in /var/cache/svr-test (see scripts/test-guest.sh). SVR_TEST_GUEST=0 skips it.
// The steps run in order and build on each other, as a user would go.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Guest, skipReason, until, parseCurl, CHECKOUT } = require('../scripts/guest/guest');

const reason = skipReason();
const MAX_EXPOSURE = 3.0;

describe('svr as a systemd service in a booted guest', { skip: reason || false, timeout: 30 * 60 * 1000 }, () => {
  let g;
  const t0 = Date.now();
  const figures = {};

  before(async () => {
    g = new Guest();
    figures.prepareMs = g.prepare();
    figures.cache = /unpacking cached root/.test(g.setupLog) ? 'warm' : 'cold';
    await g.boot();
    figures.bootMs = g.timings.boot;
  });

  after(async () => {
    if (g) await g.shutdown();
    figures.totalMs = Date.now() - t0;
    process.stderr.write(`# service.test.js: ${figures.cache || '?'} cache, root ready in ${figures.prepareMs} ms, ` +
      `boot ${figures.bootMs} ms, whole run ${figures.totalMs} ms, systemd-analyze security exposure ` +
      `${figures.exposure ?? '?'}\n`);
  });

  // --- helpers --------------------------------------------------------------------------------
  async function get(urlPath, extra = '') {
    const r = await g.exec(`curl -sS -i --max-time 10 ${extra} 'http://127.0.0.1${urlPath}'`);
    if (r.code !== 0) throw new Error(`curl http://127.0.0.1${urlPath}: ${r.stderr.trim()}`);
    return parseCurl(r.stdout);
  }
  // Poll until the server answers at all (any HTTP status).
  const waitHttp = () => until('svr to answer on http://127.0.0.1:80/', async () => (await get('/')).status > 0,
    { timeout: 30000 });
  const isActive = async () => (await g.exec('systemctl is-active svr')).stdout.trim();
  const mainPid = async () => Number((await g.sh('systemctl show -p MainPID --value svr')).trim());
  const readConfig = async () => JSON.parse(await g.sh('cat /etc/svr-config.json'));
  // Rewrite /etc/svr-config.json in place (keeps its owner and mode).
  const writeConfig = (obj) => g.sh(`node -e 'require("fs").writeFileSync("/etc/svr-config.json", process.argv[1])' '${
    JSON.stringify(obj, null, 2).replace(/'/g, "'\\''")}'`);
  // The test starts svr more often than systemd's default start limit (5 starts in 10 s) allows;
  // a person editing a config does not. Forget earlier starts before each deliberate one.
  const resetStartLimit = () => g.exec('systemctl reset-failed svr');
  async function restart() {
    await resetStartLimit();
    const r = await g.exec('systemctl restart svr');
    if (r.code !== 0) {
      const journal = await g.exec('journalctl -u svr --no-pager -o cat -n 30');
      throw new Error(`systemctl restart svr failed (${r.code}): ${r.stderr.trim()}\njournalctl -u svr:\n${journal.stdout}`);
    }
    await waitHttp();
  }
  const journal = async () => (await g.sh('journalctl -u svr --no-pager -o cat')).toString();

  // --- the steps ----------------------------------------------------------------------------------
  test('sudo ./install.sh installs, enables and starts svr on port 80', async () => {
    const out = await g.sh('cd /src && sudo ./install.sh 2>&1');
    assert.match(out, /Next steps/, 'install.sh prints the next steps');
    assert.equal(await isActive(), 'active', `svr is active after install\n${out}`);
    assert.equal((await g.exec('systemctl is-enabled svr')).stdout.trim(), 'enabled');
    await waitHttp();
    const res = await get('/');
    assert.equal(res.status, 200);
    assert.equal(res.body, fs.readFileSync(path.join(CHECKOUT, 'web/index.html'), 'utf8'), 'the default page is served');
  });

  test('the install puts things where the README says, with the right owners', async () => {
    assert.equal(await g.sh('stat -c "%U:%G %a" /etc/svr-config.json'), 'root:svr 640\n');
    const config = await readConfig();
    assert.equal(config.port, 80);
    assert.equal(config.wwwroot, '/var/www/svr');
    if (config.$schema) await g.sh(`test -f '${config.$schema}'`);
    const pw = (await g.sh('getent passwd svr')).trim().split(':');
    assert.match(pw[6], /nologin|false/, 'svr has no login shell');
    assert.equal((await g.exec(`test -e '${pw[5]}'`)).code, 1, `svr has no home (${pw[5]} does not exist)`);
    assert.match(await g.sh('stat -c %U /var/lib/svr'), /^svr$/m);
    assert.equal(await g.sh('find /usr/lib/svr ! -user root -o -perm /022 ! -type l'), '', 'code is root-owned, writable by root only');
    assert.equal((await g.exec('test -e /usr/lib/svr/test')).code, 1, 'no tests installed');
    await g.sh('test -f /usr/lib/svr/node_modules/mime-types/package.json');
    assert.match(await g.sh('svr --version'), /\d+\.\d+\.\d+/);
    assert.equal((await g.exec('svr --check')).code, 0, 'svr --check accepts the installed config');
  });

  test('systemd-analyze verify prints nothing for the installed unit', async () => {
    const verify = await g.exec('systemd-analyze verify /usr/lib/systemd/system/svr.service');
    assert.equal(verify.stdout + verify.stderr, '', 'systemd-analyze verify prints nothing');
    assert.equal(verify.code, 0);
  });

  test('systemd-analyze security: exposure at most 3.0', async () => {
    const sec = await g.exec('systemd-analyze security --no-pager svr.service');
    const m = /Overall exposure level for svr\.service: ([\d.]+)/.exec(sec.stdout);
    assert.ok(m, `systemd-analyze security output:\n${sec.stdout}${sec.stderr}`);
    figures.exposure = Number(m[1]);
    assert.ok(figures.exposure <= MAX_EXPOSURE, `exposure ${figures.exposure} > ${MAX_EXPOSURE}\n${sec.stdout}`);
  });

  // Needs the request pipeline (issue 3): enableDirectoryListing, exposeServerVersion, rewriteMap.
  test('editing /etc/svr-config.json and restarting applies the change', async () => {
    await g.sh('mkdir -p /var/www/svr/sub && echo listed > /var/www/svr/sub/listed-file.txt');
    const before = await get('/');
    assert.equal(before.headers.server, 'svr', 'the version is hidden by default');
    assert.notEqual((await get('/old-home')).status, 200, 'no rewrite rule yet');
    const listingBefore = await get('/sub/');
    assert.ok(!(listingBefore.status === 200 && listingBefore.body.includes('listed-file.txt')), 'no listing by default');

    const original = await readConfig();
    try {
      await writeConfig({
        ...original,
        enableDirectoryListing: true,
        exposeServerVersion: true,
        rewriteMap: [{ definingRegex: '/^\\/old-home$/', replacements: [{ regex: '/^\\/old-home$/', replacement: '/index.html' }] }],
      });
      await restart();
      const home = await get('/');
      assert.match(home.headers.server || '', /^svr\/\d+\.\d+\.\d+/, 'exposeServerVersion: Server header has the version');
      const listing = await get('/sub/');
      assert.equal(listing.status, 200, 'enableDirectoryListing: /sub/ is listed');
      assert.match(listing.body, /listed-file\.txt/);
      const rewritten = await get('/old-home');
      assert.equal(rewritten.status, 200, 'rewriteMap: /old-home is rewritten to /index.html');
      assert.equal(rewritten.body, home.body);
    } catch (err) {
      // Leave a working service for the steps after this one.
      await writeConfig(original);
      await resetStartLimit();
      await g.exec('systemctl restart svr');
      throw err;
    }
  });

  test('a serverSideScript.js dropped into /var/www/svr answers after a restart', async () => {
    await g.sh(`cat > /var/www/svr/serverSideScript.js <<'EOF'
// Other requests fall through to the static files: the flag stays false, so svr calls elseCallback().
if (req.url === '/from-script') {
  disableEndElseCallbackExecute = true;
  res.writeHead(200, { 'Content-Type': 'text/plain' });
  res.end('from script');
}
EOF`);
    await restart();
    const r = await get('/from-script');
    assert.equal(r.status, 200, 'serverSideScript.js in the web root should answer /from-script (server-side ' +
      `JavaScript, issue 4); got ${r.status}: ${r.body.slice(0, 200)}`);
    assert.equal(r.body, 'from script');
    assert.equal((await get('/')).status, 200, 'other requests still reach the static files');
  });

  test('SVR.JS material under the hardened unit: a counter in __dirname/../temp, a template read from the web root, a legacy .tar.gz mod', async () => {
    // Written here in SVR.JS's formats; the archive is packed in the guest with its tar.
    await g.sh('cp -p /var/www/svr/serverSideScript.js /root/serverSideScript.js.kept'); // the earlier step's, restored below
    await g.sh(`mkdir -p /tmp/legacy-mod && cd /tmp/legacy-mod && cat > index.js <<'EOF'
function Mod() {}
Mod.prototype.callback = function (req, res, serverconsole, responseEnd, href, ext, uobject, search,
    defaultpage, users, page404, head, foot, fd, elseCallback) {
  return function () {
    if (href === '/legacy.svr') { res.writeHead(200, { 'Content-Type': 'text/plain' }); res.end('legacy in ' + process.cwd()); return; }
    elseCallback();
  };
};
module.exports = Mod;
EOF
echo '{"name":"legacy-guest","version":"1.0.0"}' > mod.info && tar czf /usr/lib/svr/mods/legacy-guest.tar.gz index.js mod.info && cd / && rm -rf /tmp/legacy-mod
printf '<p>{content}</p>' > /var/www/svr/.template
cat > /var/www/svr/serverSideScript.js <<'EOF'
disableEndElseCallbackExecute = true;
if (!fs.existsSync(__dirname + "/../temp/visits")) fs.writeFileSync(__dirname + "/../temp/visits", "0");
if (href == "/count.svr") {
  var n = parseInt(fs.readFileSync(__dirname + "/../temp/visits").toString()) + 1;
  fs.writeFileSync(__dirname + "/../temp/visits", String(n));
  res.writeHead(200, { "Content-Type": "text/plain" });
  res.end("visits: " + n + " in " + __dirname);
} else if (href == "/page.svr") {
  res.writeHead(200, { "Content-Type": "text/html" });
  res.end(fs.readFileSync(".template").toString().replace("{content}", "templated"));
} else {
  elseCallback();
}
EOF`);
    try {
      await restart();
      assert.match((await get('/count.svr')).body, /^visits: 1 in \/var\/lib\/svr\/temp$/);
      assert.match((await get('/count.svr')).body, /^visits: 2 /);
      assert.equal((await get('/page.svr')).body, '<p>templated</p>', 'the working directory is the web root');
      const legacy = await get('/legacy.svr');
      assert.equal(legacy.status, 200, legacy.body.slice(0, 200));
      assert.equal(legacy.body, 'legacy in /var/www/svr');
      assert.ok(/legacy-guest\/1\.0\.0 \(legacy\)/.test(await journal()), 'the journal names the legacy mod');
      assert.equal((await get('/')).status, 200, 'other requests still reach the static files');
    } finally {
      await g.sh('rm -f /usr/lib/svr/mods/legacy-guest.tar.gz /var/www/svr/.template && mv /root/serverSideScript.js.kept /var/www/svr/serverSideScript.js');
      await restart();
    }
  });

  test('systemctl reload svr under load: workers replaced, no request failed', async (t) => {
    const main = await mainPid();
    const workers = async () => (await g.sh(`cat /proc/${main}/task/*/children`)).trim().split(/\s+/).filter(Boolean);
    const old = await workers();
    assert.ok(old.length > 0, 'svr has worker processes');
    const client = g.spawn('exec node /src/scripts/guest/load.js http://127.0.0.1/ 4');
    let out = '';
    client.stdout.setEncoding('utf8').on('data', (d) => { out += d; });
    let err = '';
    client.stderr.setEncoding('utf8').on('data', (d) => { err += d; });
    const done = new Promise((resolve) => client.on('close', resolve));
    try {
      await until('the load client to get its first response', () => {
        if (client.exitCode !== null) throw new Error(`load client exited: ${out} ${err}`);
        return out.includes('started');
      }, { timeout: 30000 });
      const reloadAt = new Date().toISOString();
      await g.sh('systemctl reload svr');
      t.diagnostic(`systemctl reload svr at ${reloadAt}`);
      await until('every worker to be replaced by the rolling reload', async () => {
        const now = await workers();
        return now.length > 0 && now.every((pid) => !old.includes(pid));
      }, { timeout: 60000 });
      assert.equal(await mainPid(), main, 'a reload keeps the main process');
      assert.equal(await isActive(), 'active');
    } finally {
      client.stdin.end();
      await done;
    }
    const line = out.trim().split('\n').pop();
    const summary = JSON.parse(line);
    t.diagnostic(`requests during the reload: ${line}`);
    assert.ok(summary.ok > 0, `requests went through: ${line}`);
    assert.equal(summary.failed, 0, `no request failed during the reload: ${line}`);
  });

  test('a broken config: restart fails, journalctl -u svr names the key, fixing it brings svr back', async () => {
    const original = await readConfig();
    await writeConfig({ ...original, port: 'eighty' });
    await resetStartLimit();
    const r = await g.exec('systemctl restart svr');
    assert.notEqual(r.code, 0, 'systemctl restart svr fails with a broken config');
    assert.notEqual(await isActive(), 'active');
    const line = await until('the validator message in journalctl -u svr', async () =>
      (await journal()).split('\n').find((l) => /\bport\b/.test(l) && /eighty/.test(l)), { timeout: 15000 });
    assert.match(line, /svr-config\.json/, `the message names the file: ${line}`);
    await writeConfig(original);
    await restart();
    assert.equal(await isActive(), 'active');
  });

  test('kill -9 of the main process: systemd brings svr back', async () => {
    const main = await mainPid();
    assert.ok(main > 0);
    await resetStartLimit();
    await g.sh(`kill -9 ${main}`);
    await until('a new main process after kill -9', async () => {
      const now = await mainPid();
      return now > 0 && now !== main && (await isActive()) === 'active';
    }, { timeout: 30000 });
    await waitHttp();
  });

  test('the access log is in the journal', async () => {
    const probe = `/access-log-probe-${process.pid}-${Date.now()}`;
    await get(probe, '-A svr-guest-test');
    const line = await until('the access log line in journalctl -u svr', async () =>
      (await journal()).split('\n').find((l) => l.includes(`"GET ${probe} HTTP/1.1"`)), { timeout: 15000 });
    assert.match(line, /^(::ffff:)?127\.0\.0\.1 .*"GET \S+ HTTP\/1\.1" 404 /, `combined log format: ${line}`);
  });

  test('the service runs as svr and cannot write /usr/lib/svr or its config', async () => {
    const main = await mainPid();
    assert.equal((await g.sh(`stat -c %U /proc/${main}`)).trim(), 'svr', 'the main process runs as svr');
    for (const pid of (await g.sh(`cat /proc/${main}/task/*/children`)).trim().split(/\s+/).filter(Boolean)) {
      assert.equal((await g.sh(`stat -c %U /proc/${pid}`)).trim(), 'svr', `worker ${pid} runs as svr`);
    }
    // In the service's own mount namespace, with its uid and gid.
    const as = `nsenter -t ${main} -m -S $(id -u svr) -G $(id -g svr) --`;
    await g.sh(`${as} sh -c 'touch /var/lib/svr/.probe && rm /var/lib/svr/.probe'`); // it can write its state
    const lib = await g.exec(`${as} touch /usr/lib/svr/.probe`);
    assert.notEqual(lib.code, 0, 'the service cannot write /usr/lib/svr');
    const conf = await g.exec(`${as} sh -c 'echo x >> /etc/svr-config.json'`);
    assert.notEqual(conf.code, 0, 'the service cannot write its config');
    // Even as root inside the service's sandbox, /usr is read-only (ProtectSystem=strict).
    const ro = await g.exec(`nsenter -t ${main} -m -- touch /usr/lib/svr/.probe`);
    assert.match(ro.stderr, /Read-only file system/);
  });

  test('./install.sh again upgrades, keeps the edited config and site, restarts the running service', async () => {
    const configBefore = await g.sh('cat /etc/svr-config.json');
    const main = await mainPid();
    await resetStartLimit();
    const out = await g.sh('cd /src && ./install.sh 2>&1');
    assert.equal(await g.sh('cat /etc/svr-config.json'), configBefore, 'the edited config is kept');
    assert.equal((await g.exec('test -e /etc/svr-config.json.new')).code, 1, 'no .new: the default did not change');
    await g.sh('test -f /var/www/svr/serverSideScript.js && test -f /var/www/svr/sub/listed-file.txt');
    assert.match(out, /restarted/, out);
    await waitHttp();
    assert.notEqual(await mainPid(), main, 'the service was restarted');
    assert.equal(await isActive(), 'active');
  });

  test('scripts/uninstall.sh removes the service, code and command, keeps config and site', async () => {
    const configBefore = await g.sh('cat /etc/svr-config.json');
    await g.sh('cd /src && scripts/uninstall.sh 2>&1');
    assert.notEqual((await g.exec('systemctl cat svr')).code, 0, 'the unit is gone');
    assert.notEqual(await isActive(), 'active');
    assert.equal((await g.exec('test -e /usr/lib/svr || test -e /usr/bin/svr')).code, 1, 'code and command removed');
    assert.equal(await g.sh('cat /etc/svr-config.json'), configBefore, 'the config is kept');
    await g.sh('test -f /var/www/svr/index.html && test -d /var/lib/svr');
    assert.notEqual((await g.exec('curl -sS --max-time 5 http://127.0.0.1/')).code, 0, 'nothing listens on port 80');
  });
});
