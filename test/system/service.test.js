'use strict';
// install.sh, systemd/svr.service and scripts/uninstall.sh in a real booted systemd, then the
// Debian package (scripts/build-deb.sh) in a fresh boot of the same guest: Debian 13 trixie (its
// nodejs is 20.19) under systemd-nspawn, driven with nsenter. Runs as root only; the guest root is
// cached in /var/cache/svr-test (see test/support/guest/root.sh). SVR_TEST_GUEST=0 skips it.
// In each part the steps run in order and build on each other, as a user would go.

const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { Guest, skipReason, until, parseCurl, CHECKOUT } = require('../support/guest/guest');

const reason = skipReason();
const MAX_EXPOSURE = 3.0;
const VERSION = require('../../package.json').version;

// One guest for both parts (they run one after the other): the second boots it again from its
// pristine root. The packages are built on the host while the first part runs, into a directory
// the guest sees as /debs.
let g;
let debs;
let debBuilds;
const figures = {};
const UPGRADE = `${VERSION}+guest1`;

function newGuest() {
  debs = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-guest-debs-'));
  g = new Guest({ binds: [[debs, '/debs']] });
  figures.prepareMs = g.prepare();
  figures.cache = /cached root/.test(g.setupLog) ? 'warm' : 'cold';
}

// The first build and one with a bumped version, to upgrade to.
function startDebBuilds() {
  if (debBuilds) return debBuilds;
  const t0 = Date.now();
  debBuilds = Promise.all([buildDeb(debs, VERSION), buildDeb(debs, UPGRADE)])
    .finally(() => { figures.debBuildMs = Date.now() - t0; });
  debBuilds.catch(() => {}); // awaited (and reported) by the package part
  return debBuilds;
}

after(async () => {
  if (g) await g.shutdown();
  if (debs) fs.rmSync(debs, { recursive: true, force: true });
});

// --- helpers, for both parts ------------------------------------------------------------------
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
// Rewrite /etc/svr-config.json in place (keeps its owner and mode), as an editor would. cat, not
// node -e: the guest's Node (Debian's, without a start-up snapshot) takes ~90 ms of CPU to start.
const writeConfig = (obj) => g.sh('cat > /etc/svr-config.json', { input: `${JSON.stringify(obj, null, 2)}\n` });
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

// The worker processes of the main process.
// The main process's children but its orphan reaper (a shell, lib/process/orphan-reaper.js).
const workerPids = async (main) => (await g.sh(`for pid in $(cat /proc/${main}/task/*/children); do [ "$(cat /proc/$pid/comm)" = sh ] || echo $pid; done`)).trim().split(/\s+/).filter(Boolean);

// Runs action() while test/support/guest/load.js keeps 4 clients asking for url; -> the load client's
// summary line (JSON: ok, failed, errors, codes).
async function underLoad(url, action) {
  const client = g.spawn(`exec node /src/test/support/guest/load.js ${url} 4`);
  let out = '';
  let err = '';
  client.stdout.setEncoding('utf8').on('data', (d) => { out += d; });
  client.stderr.setEncoding('utf8').on('data', (d) => { err += d; });
  const done = new Promise((resolve) => client.on('close', resolve));
  try {
    await until('the load client to get its first response', () => {
      if (client.exitCode !== null) throw new Error(`load client exited: ${out} ${err}`);
      return out.includes('started');
    }, { timeout: 30000 });
    await action();
  } finally {
    client.stdin.end();
    await done;
  }
  return out.trim().split('\n').pop();
}
// The unit's state as systemd sees it: ActiveState, SubState, Result, ExecMainStatus, NRestarts.
async function unitState() {
  const out = await g.sh('systemctl show -p ActiveState,SubState,Result,ExecMainStatus,NRestarts svr');
  return Object.fromEntries(out.trim().split('\n').map((line) => line.split('=')));
}
// systemctl reload svr with the config as it is: {code, output, status} (status: systemctl status).
async function reloadSvr() {
  const r = await g.exec('systemctl reload svr');
  const status = await g.exec('systemctl status svr --no-pager -l -n 30');
  return { code: r.code, output: r.stdout + r.stderr, status: status.stdout };
}
const exists = async (p) => (await g.exec(`test -e '${p}'`)).code === 0;

// The config edit both parts make: directory listing on, the version in the Server header.
async function editConfig() {
  const edited = { ...(await readConfig()), enableDirectoryListing: true, exposeServerVersion: true };
  await writeConfig(edited);
  return edited;
}
const SCRIPT = `cat > /var/www/svr/serverSideScript.js <<'EOF'
// Other requests fall through to the static files: the flag stays false, so svr calls elseCallback().
if (req.url === '/from-script') {
  disableEndElseCallbackExecute = true;
  res.writeHead(200, { 'Content-Type': 'text/plain' });
  res.end('from script');
}
EOF`;

process.on('exit', () => {
  if (!figures.cache) return;
  process.stderr.write(`# service.test.js: ${figures.cache} cache, root ready in ${figures.prepareMs} ms, ` +
    `boot ${figures.bootMs} ms, install.sh part ${figures.installPartMs ?? '?'} ms, .deb part ` +
    `${figures.debPartMs ?? '?'} ms (second boot ${figures.debBootMs ?? '?'} ms; two .deb builds, alongside the ` +
    `first part, ${figures.debBuildMs ?? '?'} ms), systemd-analyze security exposure ${figures.exposure ?? '?'}, ` +
    `systemctl start with the port taken failed in ${figures.portTakenStartMs ?? '?'} ms\n`);
});

describe('svr as a systemd service in a booted guest', { skip: reason || false, timeout: 30 * 60 * 1000 }, () => {
  let t0;

  before(async () => {
    t0 = Date.now();
    newGuest();
    await g.boot();
    figures.bootMs = g.timings.boot;
    startDebBuilds();
  });

  after(async () => {
    if (g) await g.stop();
    figures.installPartMs = Date.now() - t0;
  });

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

  // Needs the request pipeline: enableDirectoryListing, exposeServerVersion, rewriteMap.
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
    await g.sh(SCRIPT);
    await restart();
    const r = await get('/from-script');
    assert.equal(r.status, 200, 'serverSideScript.js in the web root should answer /from-script (server-side ' +
      `JavaScript); got ${r.status}: ${r.body.slice(0, 200)}`);
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
echo '{"name":"legacy-guest","version":"1.0.0"}' > mod.info && tar czf /etc/svr/mods/legacy-guest.tar.gz index.js mod.info && cd / && rm -rf /tmp/legacy-mod
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
      await g.sh('rm -f /etc/svr/mods/legacy-guest.tar.gz /var/www/svr/.template && mv /root/serverSideScript.js.kept /var/www/svr/serverSideScript.js');
      await restart();
    }
  });

  test('systemctl reload svr under load: workers replaced, no request failed', async (t) => {
    const main = await mainPid();
    const old = await workerPids(main);
    assert.ok(old.length > 0, 'svr has worker processes');
    const line = await underLoad('http://127.0.0.1/', async () => {
      const reloadAt = new Date().toISOString();
      await g.sh('systemctl reload svr');
      t.diagnostic(`systemctl reload svr at ${reloadAt}`);
      await until('every worker to be replaced by the rolling reload', async () => {
        const now = await workerPids(main);
        return now.length > 0 && now.every((pid) => !old.includes(pid));
      }, { timeout: 60000 });
      assert.equal(await mainPid(), main, 'a reload keeps the main process');
      assert.equal(await isActive(), 'active');
    });
    const summary = JSON.parse(line);
    t.diagnostic(`requests during the reload: ${line}`);
    assert.ok(summary.ok > 0, `requests went through: ${line}`);
    assert.equal(summary.failed, 0, `no request failed during the reload: ${line}`);
  });

  test('file logs: accessLog/errorLog in /var/log/svr, rotated twice by logrotate under load, no line lost or torn', async (t) => {
    assert.equal(await g.sh('cat /etc/logrotate.d/svr'), fs.readFileSync(path.join(CHECKOUT, 'systemd/svr.logrotate'), 'utf8'),
      'install.sh installed the logrotate config');
    const original = await readConfig();
    await writeConfig({ ...original, accessLog: '/var/log/svr/access.log', errorLog: '/var/log/svr/error.log' });
    await restart();
    const line = await underLoad('http://127.0.0.1/?rotate', async () => {
      const lines = () => g.sh("zcat -f /var/log/svr/access.log* | grep -c 'GET /?rotate ' || true").then(Number);
      for (const round of [1, 2]) {
        const before = await lines();
        await until(`more requests before rotation ${round}`, async () => (await lines()) > before + 50, { timeout: 30000 });
        await g.sh('logrotate -f /etc/logrotate.d/svr');
      }
      await until('requests after the second rotation', async () =>
        Number(await g.sh("grep -c 'GET /?rotate ' /var/log/svr/access.log || true")) > 50, { timeout: 30000 });
    });
    try {
      const summary = JSON.parse(line);
      t.diagnostic(`requests during the rotations: ${JSON.stringify(summary)}`);
      assert.equal(summary.failed, 0);
      assert.equal((await g.sh('ls /var/log/svr')).trim().split('\n').filter((f) => f.startsWith('access.log')).length, 3,
        'access.log, access.log.1 and access.log.2.gz');
      // Workers write what they hold at the end of each event-loop turn: wait until every answered
      // request has its line, then check that each line is whole.
      const logged = await until(`${summary.ok} access-log lines`, async () => {
        const n = Number(await g.sh("zcat -f /var/log/svr/access.log* | grep -c 'GET /?rotate ' || true"));
        return n >= summary.ok && n;
      }, { timeout: 15000 });
      assert.equal(logged, summary.ok, 'one line per request, none lost, none twice');
      assert.equal(await g.sh("zcat -f /var/log/svr/access.log* | grep -v '^127\\.0\\.0\\.1 - - \\[[^]]*\\] \"GET /[^ ]* HTTP/1\\.1\" [0-9]\\{3\\} [0-9-]* \"[^\"]*\" \"[^\"]*\" [0-9.]*$' || true"), '',
        'every line is a whole combined-format line');
      assert.match(await g.sh('zcat -f /var/log/svr/error.log*'), /log files reopened/, 'the error log has the reopen');
      assert.equal(await g.sh('stat -c "%U %a" /var/log/svr/access.log'), 'svr 640\n');
    } finally {
      await writeConfig(original);
      await restart();
    }
  });

  test('systemctl reload svr fails on a config svr refuses (reason in systemctl status), succeeds on a good one', async () => {
    const original = await readConfig();
    const main = await mainPid();
    await writeConfig({ ...original, port: 'eighty' });
    try {
      const bad = await reloadSvr();
      assert.notEqual(bad.code, 0, `systemctl reload svr fails with a refused config\n${bad.output}`);
      assert.match(bad.status, /port: expected .*"eighty"/, `systemctl status shows why:\n${bad.status}`);
      assert.equal(await isActive(), 'active', 'svr keeps running');
      assert.equal(await mainPid(), main, 'the same main process');
      assert.equal((await get('/')).status, 200, 'the previous config still serves');
    } finally {
      await writeConfig(original);
    }
    const good = await reloadSvr();
    assert.equal(good.code, 0, `systemctl reload svr succeeds with a good config\n${good.output}\n${good.status}`);
    assert.match(good.status, /svr reload: reload complete/, good.status);
    assert.equal(await isActive(), 'active');
  });

  test('svr check as a non-root admin says who may read the config and how to run the check', async () => {
    const r = await g.exec('runuser -u nobody -- svr check');
    assert.equal(r.code, 1);
    assert.match(r.stderr, /readable only by its owner root and the group svr/, r.stderr);
    assert.match(r.stderr, /sudo svr check/, r.stderr);
  });

  test('systemctl start returns once svr listens; with the port taken it fails promptly (exit 69) and does not restart', async () => {
    await restart();
    // Type=notify: the start returned after the workers listen, so the first request is answered.
    assert.equal((await get('/')).status, 200, 'answered right after systemctl restart returned');
    await g.sh('systemctl stop svr');
    // Another program on port 80; it exits when its stdin closes.
    const squatter = g.spawn(`exec node -e "require('net').createServer().listen(80, () => console.log('taken')); process.stdin.on('end', () => process.exit(0)).resume()"`);
    const closed = new Promise((resolve) => squatter.on('close', resolve));
    let said = '';
    squatter.stdout.setEncoding('utf8').on('data', (d) => { said += d; });
    squatter.stderr.setEncoding('utf8').on('data', (d) => { said += d; });
    try {
      await until('another process to listen on port 80', () => {
        if (squatter.exitCode !== null || squatter.signalCode !== null) throw new Error(`it exited: ${said}`);
        return said.includes('taken');
      }, { timeout: 15000 });
      await resetStartLimit();
      const t0 = Date.now();
      const r = await g.exec('systemctl start svr', { timeout: 60000 });
      figures.portTakenStartMs = Date.now() - t0;
      assert.notEqual(r.code, 0, 'systemctl start svr fails with port 80 taken');
      const state = await unitState();
      // "failed", not "activating/auto-restart": systemd has no restart scheduled.
      const tail = (await g.exec('journalctl -u svr --no-pager -o cat -n 15')).stdout;
      assert.deepEqual(state, { ActiveState: 'failed', SubState: 'failed', Result: 'exit-code', ExecMainStatus: '69', NRestarts: '0' }, tail);
      assert.match(await journal(), /port 80 is already in use/);
    } finally {
      squatter.stdin.end();
      await closed;
    }
    await restart();
  });

  test('a broken config: restart fails, journalctl -u svr names the key, fixing it brings svr back', async () => {
    const original = await readConfig();
    await writeConfig({ ...original, port: 'eighty' });
    await resetStartLimit();
    const r = await g.exec('systemctl restart svr');
    assert.notEqual(r.code, 0, 'systemctl restart svr fails with a broken config');
    assert.deepEqual(await unitState(), { ActiveState: 'failed', SubState: 'failed', Result: 'exit-code', ExecMainStatus: '78', NRestarts: '0' },
      'a refused config exits 78 and is not restarted');
    const line = await until('the validator message in journalctl -u svr', async () =>
      (await journal()).split('\n').find((l) => /\bport\b/.test(l) && /eighty/.test(l)), { timeout: 15000 });
    assert.match(line, /svr-config\.json/, `the message names the file: ${line}`);
    await writeConfig(original);
    await restart();
    assert.equal(await isActive(), 'active');
  });

  // `svr check` compiles the script as a worker does (the check before a restart), and the unit's
  // ExecReload= runs it before asking the primary.
  test('a serverSideScript.js with a syntax error: svr check fails, reload keeps the old workers serving, restart says why', async () => {
    await g.sh('cp -p /var/www/svr/serverSideScript.js /root/serverSideScript.js.good');
    await g.sh(`printf 'if (req.url === "/x") {\n  res.end("x"\n}\n' > /var/www/svr/serverSideScript.js`);
    try {
      const check = await g.exec('svr check');
      assert.equal(check.code, 1, `svr check fails on the broken script\n${check.stdout}${check.stderr}`);
      assert.match(check.stderr, /serverSideScript\.js:2\b/, 'with the file and line');
      const main = await mainPid();
      const workers = await workerPids(main);
      const reload = await reloadSvr();
      assert.notEqual(reload.code, 0, `systemctl reload svr fails\n${reload.output}`);
      assert.match(reload.status, /serverSideScript\.js:2/, `systemctl status says why:\n${reload.status}`);
      assert.deepEqual(await workerPids(main), workers, 'the old workers keep serving');
      assert.equal((await get('/')).status, 200);
      assert.equal((await get('/from-script')).body, 'from script', 'with the old script');
      const restart = await g.exec('systemctl restart svr');
      assert.notEqual(restart.code, 0, 'systemctl restart svr fails');
      assert.deepEqual(await unitState(), { ActiveState: 'failed', SubState: 'failed', Result: 'exit-code', ExecMainStatus: '78', NRestarts: '0' },
        'refused at start (exit 78), not restarted');
      const status = (await g.exec('systemctl status svr --no-pager -l -n 20')).stdout;
      assert.match(status, /SyntaxError.*serverSideScript\.js:2/, `systemctl status says why:\n${status}`);
    } finally {
      await g.sh('mv /root/serverSideScript.js.good /var/www/svr/serverSideScript.js');
      await restart();
    }
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

  // The primary holds the listening socket (lib/process/held-sockets.js): with Debian's Node 20.19 a
  // worker listens on the socket it is given, and new connections wait for the replacements.
  test('kill -9 of every worker: the main process stays, no connection is refused', async (t) => {
    const main = await mainPid();
    const old = await workerPids(main);
    assert.ok(old.length > 0, 'svr has worker processes');
    const line = await underLoad('http://127.0.0.1/', async () => {
      await g.sh(`kill -9 ${old.join(' ')}`);
      await until('replacements for every killed worker', async () => {
        const now = await workerPids(main);
        return now.length >= old.length && now.every((pid) => !old.includes(pid));
      }, { timeout: 30000 });
      await waitHttp();
      assert.equal(await mainPid(), main, 'the main process survived');
      assert.equal(await isActive(), 'active');
    });
    t.diagnostic(`requests while every worker was killed (guest Node ${(await g.sh('node --version')).trim()}): ${line}`);
    assert.doesNotMatch(await journal(), /cannot give a worker a listening socket/, 'the primary holds the socket with this Node');
    const summary = JSON.parse(line);
    assert.ok(summary.ok > 0, `requests went through: ${line}`);
    assert.equal(summary.codes.ECONNREFUSED || 0, 0, `no connection refused: ${line}`);
    assert.equal(summary.codes.TIMEOUT || 0, 0, `no connection left waiting: ${line}`);
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
    for (const pid of await workerPids(main)) {
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

  // The listening socket waits in systemd's file descriptor store while the service restarts
  // (lib/process/fd-store.js); the unit has no start limit, so restarts in quick succession are fine.
  test('./install.sh again (an upgrade), then five quick restarts, under load: 0 refused, 0 failed; config and site kept', async (t) => {
    const configBefore = await g.sh('cat /etc/svr-config.json');
    const main = await mainPid();
    // A mod where older installs kept admin mods: the upgrade moves it to /etc/svr/mods.
    await g.sh(`cat > /usr/lib/svr/mods/05-mine.js <<'EOF'
module.exports = (req, res, log, config, next) => { res.setHeader('X-Mine', 'kept'); next(); };
EOF`);
    let out;
    const line = await underLoad('http://127.0.0.1/', async () => {
      out = await g.sh('cd /src && ./install.sh 2>&1');
      assert.notEqual(await mainPid(), main, 'install.sh restarted the service');
      // A configuration-management run: restart after restart, no reset-failed in between; with
      // install.sh's, six starts, one more than systemd's default start limit (5 in 10 s) allows.
      await g.sh('for i in 1 2 3 4 5; do systemctl restart svr || exit 1; done');
      assert.equal(await isActive(), 'active', 'no start limit left the service failed');
    });
    t.diagnostic(`requests across install.sh and five restarts: ${line}`);
    const summary = JSON.parse(line);
    assert.ok(summary.ok > 0, `requests went through: ${line}`);
    assert.deepEqual(summary.codes, {}, `no connection refused, no request failed: ${line}`);
    assert.equal(summary.failed, 0);
    assert.match(out, /service: restarted/, out);
    assert.match(out, /moved your mod 05-mine\.js from \/usr\/lib\/svr\/mods to \/etc\/svr\/mods/, out);
    assert.equal((await get('/')).headers['x-mine'], 'kept', 'the moved mod runs from /etc/svr/mods');
    assert.equal((await g.exec('svr check')).code, 0, 'svr check loads it too');
    assert.equal(await g.sh('cat /etc/svr-config.json'), configBefore, 'the edited config is kept');
    assert.equal((await g.exec('test -e /etc/svr-config.json.new')).code, 1, 'no .new: the default did not change');
    await g.sh('test -f /var/www/svr/serverSideScript.js && test -f /var/www/svr/sub/listed-file.txt');
  });

  test('scripts/uninstall.sh removes the service, code and command, keeps config, mods, logs and site, and says so', async () => {
    const configBefore = await g.sh('cat /etc/svr-config.json');
    const out = await g.sh('cd /src && scripts/uninstall.sh 2>&1');
    assert.match(out, /^Kept: .*\/etc\/svr\/mods, .*\/var\/log\/svr, \/etc\/logrotate\.d\/svr, the user svr/m, out);
    await g.sh('test -f /etc/svr/mods/05-mine.js && test -d /var/log/svr && test -f /etc/logrotate.d/svr');
    assert.notEqual((await g.exec('systemctl cat svr')).code, 0, 'the unit is gone');
    assert.notEqual(await isActive(), 'active');
    assert.equal((await g.exec('test -e /usr/lib/svr || test -e /usr/bin/svr')).code, 1, 'code and command removed');
    assert.equal(await g.sh('cat /etc/svr-config.json'), configBefore, 'the config is kept');
    await g.sh('test -f /var/www/svr/index.html && test -d /var/lib/svr');
    assert.notEqual((await g.exec('curl -sS --max-time 5 http://127.0.0.1/')).code, 0, 'nothing listens on port 80');
  });

  test('scripts/uninstall.sh --purge removes the config, state and user, keeps the site', async () => {
    const out = await g.sh('cd /src && scripts/uninstall.sh --purge 2>&1');
    assert.match(out, /remove it with --remove-site/, out);
    for (const p of ['/etc/svr-config.json', '/etc/svr', '/var/lib/svr', '/var/log/svr', '/etc/logrotate.d/svr']) assert.equal(await exists(p), false, `${p} removed`);
    assert.notEqual((await g.exec('getent passwd svr')).code, 0, 'the user svr is removed');
    await g.sh('test -f /var/www/svr/index.html && test -f /var/www/svr/serverSideScript.js');
  });
});

// Builds a .deb on the host (scripts/build-deb.sh); resolves its path. The checkout's production
// modules instead of an npm ci each (test/system/deb.test.js builds with npm ci). xz at level 1 instead of
// dpkg-deb's 6 (DPKG_DEB_COMPRESSOR_LEVEL): the guest installs the same files, and each build
// spends ~0.5 s of CPU compressing instead of ~2.5 s (test/system/deb.test.js builds its package the same way).
function buildDeb(out, version) {
  return new Promise((resolve, reject) => {
    const child = spawn(path.join(CHECKOUT, 'scripts/build-deb.sh'), ['--out', out, '--version', version, '--reuse-node-modules'],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DPKG_DEB_COMPRESSOR_LEVEL: '1' } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => { stdout += d; });
    child.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(stdout.trim())
      : reject(new Error(`scripts/build-deb.sh --version ${version} exited ${code}:\n${stderr}`))));
  });
}

describe('the Debian package in a booted guest: install, edit, reload, upgrade, remove, purge', { skip: reason || false, timeout: 30 * 60 * 1000 }, () => {
  let t0;
  const apt = (args) => g.exec(`cd /debs && DEBIAN_FRONTEND=noninteractive apt-get ${args} 2>&1`, { timeout: 300000 });
  const installed = async () => (await g.exec("dpkg-query -W -f '${Version} ${db:Status-Abbrev}' svr")).stdout.trim();
  let edited;

  before(async () => {
    t0 = Date.now();
    if (!g) newGuest();
    startDebBuilds();
    await g.boot();
    figures.debBootMs = g.timings.boot;
    const [first, second] = await debBuilds;
    assert.equal(path.basename(first), `svr_${VERSION}_all.deb`);
    assert.equal(path.basename(second), `svr_${UPGRADE}_all.deb`);
  });

  after(async () => {
    if (g) await g.stop();
    figures.debPartMs = Date.now() - t0;
  });

  test('apt-get install ./svr_*.deb installs, enables and starts svr on port 80', async () => {
    const r = await apt(`install -y ./svr_${VERSION}_all.deb`);
    assert.equal(r.code, 0, r.stdout);
    assert.equal(await installed(), `${VERSION} ii`);
    assert.equal(await isActive(), 'active', r.stdout);
    assert.equal((await g.exec('systemctl is-enabled svr')).stdout.trim(), 'enabled');
    await waitHttp();
    const res = await get('/');
    assert.equal(res.status, 200);
    assert.equal(res.body, fs.readFileSync(path.join(CHECKOUT, 'web/index.html'), 'utf8'), 'the default page is served');
    assert.equal((await g.sh('svr --version')).split(' ')[0], `svr/${VERSION}`);
  });

  test('the package makes the same layout as install.sh: account, config owner, state', async () => {
    assert.equal(await g.sh('stat -c "%U:%G %a" /etc/svr-config.json'), 'root:svr 640\n');
    assert.match(await g.sh('dpkg-statoverride --list /etc/svr-config.json'), /^root svr 0?640 \/etc\/svr-config\.json$/m);
    assert.match(await g.sh("dpkg-query -W -f '${Conffiles}' svr"), /^ \/etc\/svr-config\.json [0-9a-f]{32}$/m);
    const config = await readConfig();
    assert.equal(config.port, 80);
    assert.equal(config.wwwroot, '/var/www/svr');
    const pw = (await g.sh('getent passwd svr')).trim().split(':');
    assert.match(pw[6], /nologin/, 'svr has no login shell');
    assert.equal(await exists(pw[5]), false, `svr has no home (${pw[5]} does not exist)`);
    assert.equal(await g.sh('stat -c "%U:%G %a" /var/lib/svr'), 'svr:svr 750\n');
    assert.equal(await g.sh('stat -c "%U:%G %a" /etc/svr/mods'), 'root:root 755\n', 'a place for the admin\'s mods');
    assert.equal(await g.sh('dpkg -S /etc/svr/mods 2>/dev/null || true'), '', 'that belongs to no package');
    assert.equal(await g.sh('stat -c %U /var/www/svr/index.html'), 'root\n');
    assert.equal(await g.sh('dpkg -S /var/www/svr 2>/dev/null || true'), '', 'the site belongs to no package');
    assert.equal((await g.exec('svr --check')).code, 0, 'svr --check accepts the installed config');
  });

  test('editing /etc/svr-config.json and restarting applies the change', async () => {
    await g.sh('mkdir -p /var/www/svr/sub && echo listed > /var/www/svr/sub/listed-file.txt');
    assert.equal((await get('/')).headers.server, 'svr', 'the version is hidden by default');
    edited = await editConfig();
    await restart();
    assert.match((await get('/')).headers.server || '', /^svr\/\d+\.\d+\.\d+/, 'exposeServerVersion applied');
    const listing = await get('/sub/');
    assert.equal(listing.status, 200, 'enableDirectoryListing applied');
    assert.match(listing.body, /listed-file\.txt/);
  });

  test('a serverSideScript.js dropped into /var/www/svr answers after a restart', async () => {
    await g.sh(SCRIPT);
    await restart();
    const r = await get('/from-script');
    assert.equal(r.status, 200);
    assert.equal(r.body, 'from script');
  });

  test('systemctl reload with a broken config fails and says why; svr keeps serving with the config it has', async () => {
    const main = await mainPid();
    await writeConfig({ ...edited, port: 'eighty' });
    try {
      const bad = await reloadSvr();
      assert.notEqual(bad.code, 0, `systemctl reload svr fails\n${bad.output}`);
      assert.match(bad.status, /port: expected .*"eighty"/, bad.status);
      assert.equal(await isActive(), 'active');
      assert.equal(await mainPid(), main, 'the same main process');
      assert.equal((await get('/sub/')).status, 200, 'the edited config still serves (listing on)');
      assert.equal((await get('/from-script')).body, 'from script');
    } finally {
      await writeConfig(edited);
    }
  });

  test('apt-get install of a newer build under load upgrades (0 refused, 0 failed), keeps the edited config and the site, restarts svr', async (t) => {
    const configBefore = await g.sh('cat /etc/svr-config.json');
    const main = await mainPid();
    // An admin mod in /etc/svr/mods, and one where older packages kept them: postinst moves it.
    const mod = (name, header) => `cat > ${name} <<'EOF'
module.exports = (req, res, log, config, next) => { res.setHeader('${header}', 'yes'); next(); };
EOF`;
    await g.sh(mod('/etc/svr/mods/10-admin.js', 'X-Admin'));
    await g.sh(mod('/usr/lib/svr/mods/05-old.js', 'X-Old'));
    let r;
    const line = await underLoad('http://127.0.0.1/', async () => {
      r = await apt(`install -y ./svr_${UPGRADE}_all.deb`);
    });
    assert.match(r.stdout, /moved your mod 05-old\.js from \/usr\/lib\/svr\/mods to \/etc\/svr\/mods/, r.stdout);
    const headers = (await get('/')).headers;
    assert.deepEqual([headers['x-admin'], headers['x-old']], ['yes', 'yes'], 'both mods run from /etc/svr/mods after the upgrade');
    assert.equal(r.code, 0, r.stdout);
    t.diagnostic(`requests across the upgrade: ${line}`);
    const summary = JSON.parse(line);
    assert.ok(summary.ok > 0, `requests went through: ${line}`);
    assert.deepEqual(summary.codes, {}, `no connection refused, no request failed during the upgrade: ${line}`);
    assert.equal(await installed(), `${UPGRADE} ii`);
    assert.equal(await g.sh('cat /etc/svr-config.json'), configBefore, 'the edited config is kept');
    assert.equal(await g.sh('ls /etc | grep "^svr-config" || true'), 'svr-config.json\n', 'no .dpkg-dist or .new beside it');
    assert.equal(await g.sh('stat -c "%U:%G %a" /etc/svr-config.json'), 'root:svr 640\n');
    await g.sh('test -f /var/www/svr/serverSideScript.js && test -f /var/www/svr/sub/listed-file.txt');
    await waitHttp();
    assert.equal(await isActive(), 'active');
    assert.notEqual(await mainPid(), main, 'the service was restarted onto the new code');
    assert.equal((await g.sh('svr --version')).split(' ')[0], `svr/${UPGRADE}`);
    assert.equal((await get('/sub/')).status, 200, 'the edited config serves');
    assert.equal((await get('/from-script')).body, 'from script');
  });

  test('apt-get remove stops svr and removes the code; config, state, user and site stay', async () => {
    const configBefore = await g.sh('cat /etc/svr-config.json');
    const r = await apt('remove -y svr');
    assert.equal(r.code, 0, r.stdout);
    assert.match(await installed(), / rc$/, 'only the config files are left (dpkg status rc)');
    assert.notEqual(await isActive(), 'active');
    for (const p of ['/usr/lib/svr/svr.js', '/usr/bin/svr', '/usr/lib/systemd/system/svr.service']) {
      assert.equal(await exists(p), false, `${p} removed`);
    }
    assert.equal(await g.sh('cat /etc/svr-config.json'), configBefore, 'the config is kept');
    assert.equal((await g.exec('getent passwd svr')).code, 0, 'the user svr is kept');
    await g.sh('test -d /var/lib/svr && test -f /var/www/svr/serverSideScript.js && test -f /etc/svr/mods/10-admin.js');
  });

  test('apt-get purge removes the service, code, config, state and the svr user, never the site', async () => {
    const r = await apt('purge -y svr');
    assert.doesNotMatch(r.stdout, /warning|error/i, 'dpkg leaves nothing behind that it warns about');
    assert.equal(r.code, 0, r.stdout);
    assert.equal((await g.exec('dpkg-query -W svr')).stdout.trim(), '', 'svr is no longer known to dpkg');
    assert.notEqual((await g.exec('systemctl cat svr')).code, 0, 'the unit is gone');
    assert.notEqual(await isActive(), 'active');
    for (const p of ['/usr/lib/svr', '/usr/bin/svr', '/etc/svr-config.json', '/etc/svr', '/var/lib/svr',
      '/etc/systemd/system/multi-user.target.wants/svr.service']) {
      assert.equal(await exists(p), false, `${p} removed`);
    }
    assert.notEqual((await g.exec('getent passwd svr')).code, 0, 'the user svr is removed');
    assert.notEqual((await g.exec('getent group svr')).code, 0, 'the group svr is removed');
    assert.equal(await g.sh('dpkg-statoverride --list /etc/svr-config.json || true'), '', 'the stat override is removed');
    await g.sh('test -f /var/www/svr/index.html && test -f /var/www/svr/serverSideScript.js && test -f /var/www/svr/sub/listed-file.txt');
    assert.notEqual((await g.exec('curl -sS --max-time 5 http://127.0.0.1/')).code, 0, 'nothing listens on port 80');
  });
});
