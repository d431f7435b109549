'use strict';
// `svr check` is the start: both run process/start.js's steps, so each config below fails the
// check (exit 1) and the start (exit 78) with the same line, naming the file (and the line of a
// script or a mod). A config the check accepts starts. The start's steps are awaited: a stop
// while a mod is still loading in the child process ends the start at once.

const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { makeTempDir, writeFiles, getFreePort, runSvr, spawnSvr, startServer, request, isAlive, waitUntil } = require('../support/helpers');

// name: { config, files (under the directory holding svr-config.json), expected(dir) -> the error line }
const BROKEN = {
  'a proxy upstream on port 99999': {
    config: { proxy: [{ path: '/api/', upstreams: ['http://127.0.0.1:99999'] }] },
    expected: (dir) => `${dir}/svr-config.json: proxy[0].upstreams[0]: expected an http://, https:// or unix:/absolute/path upstream, found "http://127.0.0.1:99999"`,
  },
  'a serverSideScript.js with a syntax error': {
    files: { 'web/serverSideScript.js': 'var a = 1;\nvar b = ;\nvar c = 3;\n' },
    expected: (dir) => `${dir}/web/serverSideScript.js: cannot load the server-side script: SyntaxError: Unexpected token ';' (at ${dir}/web/serverSideScript.js:2)`,
  },
  'a mod that throws while loading': {
    config: { modsDirectory: 'mods' },
    files: { 'mods/broken.js': 'const ready = false;\n\nif (!ready) throw new Error("no database");\nmodule.exports = () => {};\n' },
    expected: (dir) => `${dir}/mods/broken.js: cannot load the mod: Error: no database (at ${dir}/mods/broken.js:3)`,
  },
  'a rewrite regex that does not compile': {
    config: { rewriteMap: [{ definingRegex: '/(a/', replacements: [] }] },
    expected: (dir) => `${dir}/svr-config.json: rewriteMap[0].definingRegex: expected a regular expression written as "/pattern/flags", found "/(a/" (Invalid regular expression: /(a/: Unterminated group)`,
  },
};

async function writeSite({ config = {}, files = {} }) {
  const dir = makeTempDir('svr-start-check-');
  writeFiles(dir, { 'web/index.html': 'hello\n', ...files });
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ port: await getFreePort(), wwwroot: 'web', workers: 1, ...config }, null, 2));
  return { dir, configFile, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

for (const [name, { config, files, expected }] of Object.entries(BROKEN)) {
  test(`svr check: ${name} fails with the file (and line), exit 1`, async (t) => {
    const site = await writeSite({ config, files });
    t.after(site.remove);
    const result = await runSvr(['check', '--config', site.configFile]);
    assert.equal(result.code, 1, result.stderr);
    assert.deepStrictEqual(result.stderr.split('\n'), [expected(site.dir), `${site.configFile}: 1 error`]);
  });

  test(`start: ${name} stops the start with the same line, exit 78, no worker forked`, async (t) => {
    const site = await writeSite({ config, files });
    t.after(site.remove);
    const result = await runSvr(['--config', site.configFile]);
    assert.equal(result.code, 78, result.stderr);
    const lines = result.stderr.split('\n');
    assert.ok(lines.some((line) => line.endsWith(` error primary:   ${expected(site.dir)}`)), result.stderr);
    assert.ok(!lines.some((line) => / info worker \d+:| ready$/.test(line)), result.stderr);
  });
}

test('svr check reports every problem at once: a script, a proxy upstream and a certificate', async (t) => {
  const { config, expected: proxyLine } = BROKEN['a proxy upstream on port 99999'];
  const { files, expected: scriptLine } = BROKEN['a serverSideScript.js with a syntax error'];
  const site = await writeSite({ config: { ...config, secure: true, sport: 0, cert: 'missing.crt', key: 'missing.key' }, files });
  t.after(site.remove);
  const result = await runSvr(['check', '--config', site.configFile]);
  assert.equal(result.code, 1, result.stderr);
  const lines = result.stderr.split('\n');
  assert.ok(lines.includes(proxyLine(site.dir)), result.stderr);
  assert.ok(lines.includes(scriptLine(site.dir)), result.stderr);
  assert.ok(lines.some((line) => line.startsWith(`${site.configFile}: cert: cannot read `)), result.stderr);
  assert.equal(lines.at(-1), `${site.configFile}: 4 errors`);
});

test('svr check names every mod that cannot load, not only the first', async (t) => {
  const site = await writeSite({
    config: { modsDirectory: 'mods' },
    files: { 'mods/a.js': 'throw new Error("first");\n', 'mods/b.js': 'module.exports = (req, res, log, config, next) => next();\nmodule.exports.modInfo = { name: "b", version: "1" };\n', 'mods/c.js': 'module.exports = function ( {\n' },
  });
  t.after(site.remove);
  const result = await runSvr(['check', '--config', site.configFile]);
  assert.equal(result.code, 1, result.stderr);
  const lines = result.stderr.split('\n');
  assert.equal(lines[0], `${site.dir}/mods/a.js: cannot load the mod: Error: first (at ${site.dir}/mods/a.js:1)`);
  assert.match(lines[1], /^\S+\/mods\/c\.js: cannot load the mod: SyntaxError: /);
  assert.equal(lines.at(-1), `${site.configFile}: 2 errors`);
});

test('svr check --disable-mods: a mod that cannot load is a warning, as at such a start', async (t) => {
  const { config, files, expected } = BROKEN['a mod that throws while loading'];
  const site = await writeSite({ config, files });
  t.after(site.remove);
  const result = await runSvr(['check', '--disable-mods', '--config', site.configFile]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, `warning: --disable-mods: ${expected(site.dir)}`);
  assert.equal(result.stdout, `${site.configFile}: ok`);
});

test('--single-threaded refuses the same config with the same line, exit 78', async (t) => {
  const { files, expected } = BROKEN['a serverSideScript.js with a syntax error'];
  const site = await writeSite({ files });
  t.after(site.remove);
  const result = await runSvr(['--single-threaded', '--config', site.configFile]);
  assert.equal(result.code, 78, result.stderr);
  assert.ok(result.stderr.split('\n').some((line) => line.endsWith(`   ${expected(site.dir)}`)), result.stderr);
});

test('a config svr check accepts (proxy rules, a rewrite map, a script, a mod needing environmentVariables) starts and serves', async () => {
  const config = {
    modsDirectory: 'mods',
    environmentVariables: { SVR_START_CHECK: 'set' },
    proxy: [{ path: '/api/', upstreams: ['http://127.0.0.1:9'] }],
    rewriteMap: [{ definingRegex: '/^\\/old$/', replacements: [{ regex: '/^\\/old$/', replacement: '/new' }] }],
  };
  const files = {
    'serverSideScript.js': 'if (href === "/new") { responseEnd("from the script"); return; }\n',
    // environmentVariables are set before the mods load, in the check as in a worker.
    '../mods/ok.js': 'if (process.env.SVR_START_CHECK !== "set") throw new Error("environmentVariables not applied");\n' +
      'module.exports = (req, res, log, config, next) => next();\nmodule.exports.modInfo = { name: "ok", version: "1" };\n',
  };
  const srv = await startServer({ config, files });
  try {
    const check = await runSvr(['check', '--config', srv.configFile]);
    assert.equal(check.code, 0, check.stderr);
    assert.equal(check.stdout, `${srv.configFile}: ok`);
    assert.equal((await request(`${srv.url}/old`)).text, 'from the script');
  } finally {
    await srv.stop();
  }
});

// The mods step runs in a child process the primary awaits: a SIGTERM meanwhile is handled at
// once (the child is killed with the primary), not after modsLoadTimeout.
test('a stop while the start awaits a mod that is still loading exits 0 at once and ends the child', async (t) => {
  const marker = path.join(makeTempDir('svr-start-marker-'), 'loading');
  const site = await writeSite({
    config: { modsDirectory: 'mods', modsLoadTimeout: 60000 },
    files: {
      'mods/slow.js': `require('node:fs').writeFileSync(${JSON.stringify(marker)}, String(process.pid));\n` +
        'Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000);\nmodule.exports = () => {};\n',
    },
  });
  t.after(site.remove);
  const svr = spawnSvr(['--config', site.configFile]);
  let childPid = null;
  try {
    assert.ok(await waitUntil(() => fs.existsSync(marker) && fs.readFileSync(marker, 'utf8') !== ''), 'the mod never began loading');
    childPid = Number(fs.readFileSync(marker, 'utf8'));
    assert.ok(isAlive(childPid));
    const signalledAt = Date.now();
    svr.proc.kill('SIGTERM');
    const { code } = await svr.exited;
    assert.equal(code, 0, svr.err.lines.join('\n'));
    assert.ok(Date.now() - signalledAt < 10000, 'the stop waited for the mod');
    assert.ok(svr.err.lines.some((line) => line.endsWith('info primary: SIGTERM: stopping before any worker started')), svr.err.lines.join('\n'));
    assert.ok(await waitUntil(() => !isAlive(childPid)), 'the child loading the mods outlived the primary');
  } finally {
    if (svr.proc.exitCode === null && svr.proc.signalCode === null) svr.proc.kill('SIGKILL');
    if (childPid && isAlive(childPid)) process.kill(childPid, 'SIGKILL');
    fs.rmSync(path.dirname(marker), { recursive: true, force: true });
  }
});
