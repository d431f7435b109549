'use strict';
// Mods: name order (files, folders, package.json main), next() chaining into the script and the
// static files, async mods, what a mod gets (req/res/config/logFacilities), configValidators,
// load errors, --disable-mods, mods never served, and reload behaviour. Behaviour runs the pipeline
// in-process; start-up failures, the command line and reloads start svr.js.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { startServer, request, runSvr, makeTempDir, writeFiles, getFreePort } = require('../../support/helpers');
const { startPipeline } = require('../../support/pipeline');

// Appends its name to X-Order and passes on, unless the query says ?stop=<name>.
function orderMod(name, { async = false } = {}) {
  return `
module.exports = ${async ? 'async ' : ''}function (req, res, logFacilities, config, next) {
  ${async ? 'await new Promise((resolve) => setTimeout(resolve, 5));' : ''}
  res.setHeader('X-Order', (res.getHeader('X-Order') || '') + '${name},');
  if (req.parsedURL.query.stop === '${name}') { res.end('stopped by ${name}'); return; }
  next();
};
module.exports.modInfo = { name: '${name}', version: '1.0.0' };
`;
}

const INSPECT_MOD = `
module.exports = function (req, res, logFacilities, config, next) {
  if (req.parsedURL.pathname === '/inspect') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({
      parsed: req.parsedURL, original: req.originalParsedURL, frozen: Object.isFrozen(req.parsedURL),
      authUser: req.authUser, head: res.head, foot: res.foot, wwwroot: config.wwwroot,
      serverString: config.generateServerString(), customHeaders: config.getCustomHeaders(),
      greeting: config.greeting, logFacilities: Object.keys(logFacilities).sort(),
    }));
    return;
  }
  if (req.parsedURL.pathname === '/mod-error') return res.error(403);
  if (req.parsedURL.pathname === '/mod-redirect') return res.redirect('/there', true);
  if (req.parsedURL.pathname === '/mod-log') { logFacilities.locwarnmessage('a warning from the mod'); return res.end('ok'); }
  if (req.parsedURL.pathname === '/mod-throw') throw new Error('thrown by the mod');
  next();
};
module.exports.modInfo = { name: 'inspector', version: '2.1' };
module.exports.configValidators = { greeting: (value) => typeof value === 'string' };
`;

const SCRIPT = `
res.setHeader('X-Order', (res.getHeader('X-Order') || '') + 'script,');
if (uobject.query.stop === 'script') { res.end('stopped by the script'); return; }
`;

function modFiles() {
  return {
    '../mods/10-b.js': orderMod('b'),
    '../mods/02-a.js': orderMod('a'),
    '../mods/05-folder/index.js': orderMod('folder'),
    '../mods/07-pkg/package.json': JSON.stringify({ main: 'lib/main.js' }),
    '../mods/07-pkg/lib/main.js': orderMod('pkg', { async: true }),
    '../mods/01-inspect.cjs': INSPECT_MOD,
    '../mods/README.md': 'this is not JavaScript {',
    '../mods/notes.txt': 'ignored',
    '../mods/08-empty-folder/data.json': '{}',
    'serverSideScript.js': SCRIPT,
    'page.html': 'static page',
    '.head': '<H>',
  };
}

let server;
test.before(async () => {
  server = await startPipeline({
    config: { modsDirectory: 'mods', greeting: 'hello', rewriteMap: [{ definingRegex: '/^\\/old\\//', replacements: [{ regex: '/^\\/old\\/\\?/', replacement: '/inspect?from=old&' }] }], customHeaders: { 'X-Site': 'svr {path}' }, exposeModsInErrorPages: true },
    files: modFiles(),
  });
});
test.after(() => server.stop());

test('mods run in file-name order (files, folders, package.json main), then the script, then static files', async () => {
  const res = await request(`${server.url}/index-missing.html`);
  assert.equal(res.headers['x-order'], 'a,folder,pkg,b,script,');
  assert.equal(res.status, 404, 'the static handler answered last');
  const page = await request(`${server.url}/page.html?x`);
  assert.equal(page.text, 'static page');
});

test('a mod that does not call next() ends the chain', async () => {
  const res = await request(`${server.url}/x?stop=folder`);
  assert.equal(res.text, 'stopped by folder');
  assert.equal(res.headers['x-order'], 'a,folder,');
});

test('an async mod passes on with next() after awaiting', async () => {
  const res = await request(`${server.url}/x?stop=b`);
  assert.equal(res.text, 'stopped by b');
  assert.equal(res.headers['x-order'], 'a,folder,pkg,b,', 'pkg (async) called next()');
});

test('next() from the last mod reaches serverSideScript.js', async () => {
  const res = await request(`${server.url}/x?stop=script`);
  assert.equal(res.text, 'stopped by the script');
  assert.equal(res.headers['x-order'], 'a,folder,pkg,b,script,');
});

test('a mod gets parsedURL, originalParsedURL, authUser, head/foot and the config with its helpers', async () => {
  const res = await request(`${server.url}/old/?q=1`, { headers: { host: 'example.org:8080' } });
  assert.equal(res.status, 200);
  const seen = JSON.parse(res.text);
  assert.equal(seen.parsed.pathname, '/inspect');
  assert.deepEqual(seen.parsed.query, { from: 'old', q: '1' });
  assert.equal(seen.parsed.hostname, 'example.org');
  assert.equal(seen.parsed.port, '8080');
  assert.equal(seen.original.pathname, '/old/');
  assert.equal(seen.original.search, '?q=1');
  assert.equal(seen.frozen, true);
  assert.equal(seen.authUser, null);
  assert.equal(seen.head, '<H>');
  assert.equal(seen.foot, '');
  assert.equal(fs.realpathSync(seen.wwwroot), fs.realpathSync(server.root));
  assert.equal(seen.serverString, 'svr');
  assert.deepEqual(seen.customHeaders, { Server: 'svr', 'X-Site': 'svr /inspect?from=old&q=1' });
  assert.equal(seen.greeting, 'hello', 'a key declared by configValidators reaches the mod');
  assert.deepEqual(seen.logFacilities, ['climessage', 'errmessage', 'locerrmessage', 'locmessage', 'locwarnmessage', 'reqmessage', 'resmessage']);
});

test('res.error and res.redirect answer for a mod', async () => {
  const error = await request(`${server.url}/mod-error`);
  assert.equal(error.status, 403);
  assert.match(error.text, /inspector\/2\.1/, 'the page raised by the mod names it (exposeModsInErrorPages)');
  const redirect = await request(`${server.url}/mod-redirect`);
  assert.equal(redirect.status, 302);
  assert.equal(redirect.headers.location, '/there');
});

test('logFacilities write to the server log, naming the mod', async () => {
  const since = server.stderr().length;
  await request(`${server.url}/mod-log`);
  await server.waitForLog(/warn .*inspector\/2\.1: a warning from the mod/, 'stderr', since);
});

test('a mod that throws gives a 500 naming it (exposeModsInErrorPages)', async () => {
  const res = await request(`${server.url}/mod-throw`);
  assert.equal(res.status, 500);
  assert.match(res.text, /inspector\/2\.1/);
});

test('mods in the web root are never served', async () => {
  const srv = await startPipeline({ config: { modsDirectory: 'web/mods' }, files: { 'mods/01-a.js': orderMod('a'), 'page.html': 'x' } });
  try {
    const res = await request(`${srv.url}/mods/01-a.js`);
    assert.equal(res.status, 404);
    assert.equal(res.headers['x-order'], 'a,', 'the mod itself ran');
    assert.ok(!res.text.includes('module.exports'));
  } finally {
    await srv.stop();
  }
});

test('exposeModsInErrorPages false: the 500 page does not name the mod', async () => {
  const srv = await startPipeline({ config: { modsDirectory: 'mods' }, files: { '../mods/a.js': 'module.exports = () => { throw new Error("x"); }; module.exports.modInfo = { name: "secretmod", version: "9" };' } });
  try {
    const res = await request(`${srv.url}/`);
    assert.equal(res.status, 500);
    assert.ok(!res.text.includes('secretmod'));
  } finally {
    await srv.stop();
  }
});

test('--disable-mods starts without mods and without the script, and still accepts mod config keys', async () => {
  const srv = await startServer({ config: { modsDirectory: 'mods', greeting: 'hello' }, files: modFiles(), args: ['--disable-mods'] });
  try {
    const res = await request(`${srv.url}/page.html?stop=a`);
    assert.equal(res.status, 200);
    assert.equal(res.text, 'static page');
    assert.equal(res.headers['x-order'], undefined);
    assert.ok(!srv.stderr().some((line) => /server-side JavaScript:/.test(line)));
  } finally {
    await srv.stop();
  }
});

// Starts svr.js on a config with these mods and returns its exit code and stderr.
async function startFailing(files, config = {}) {
  const dir = makeTempDir();
  writeFiles(dir, { 'web/index.html': 'x', ...files });
  fs.writeFileSync(path.join(dir, 'svr-config.json'), JSON.stringify({ port: await getFreePort(), wwwroot: 'web', workers: 1, modsDirectory: 'mods', ...config }));
  try {
    return await runSvr(['--config', path.join(dir, 'svr-config.json')]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('a mod with a syntax error stops the start with one message naming the file', async () => {
  const result = await startFailing({ 'mods/01-ok.js': orderMod('ok'), 'mods/02-broken.js': 'module.exports = function ( {' });
  assert.equal(result.code, 78);
  const lines = result.stderr.split('\n').filter((line) => /02-broken\.js/.test(line));
  assert.equal(lines.length, 1, result.stderr);
  assert.match(lines[0], /mods\/02-broken\.js: cannot load the mod: SyntaxError/);
});

test('a mod that throws while loading or exports no function stops the start', async () => {
  const thrown = await startFailing({ 'mods/a.js': 'throw new Error("no database");' });
  assert.equal(thrown.code, 78);
  assert.match(thrown.stderr, /mods\/a\.js: cannot load the mod: Error: no database/);
  const notFunction = await startFailing({ 'mods/b.js': 'module.exports = { modInfo: {} };' });
  assert.equal(notFunction.code, 78);
  assert.match(notFunction.stderr, /mods\/b\.js: cannot load the mod: it must export a function/);
});

test('a missing configured modsDirectory stops the start', async () => {
  const result = await startFailing({}, { modsDirectory: 'no-such-dir' });
  assert.equal(result.code, 78);
  assert.match(result.stderr, /no-such-dir: cannot load the mod: cannot read the mods directory \(ENOENT\)/);
});

test('--check accepts a key a mod declares, and rejects a bad value for it', async () => {
  const dir = makeTempDir();
  writeFiles(dir, {
    'web/index.html': 'x',
    'mods/greeting.js': `module.exports = (req, res, log, config, next) => next();
module.exports.modInfo = { name: 'greeting', version: '1.0.0' };
module.exports.configValidators = { greeting: (value) => typeof value === 'string' };`,
  });
  const configFile = path.join(dir, 'svr-config.json');
  try {
    fs.writeFileSync(configFile, JSON.stringify({ wwwroot: 'web', modsDirectory: 'mods', greeting: 'hello' }));
    const ok = await runSvr(['--check', '--config', configFile]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /: ok$/);
    fs.writeFileSync(configFile, JSON.stringify({ wwwroot: 'web', modsDirectory: 'mods', greeting: 42 }));
    const bad = await runSvr(['--check', '--config', configFile]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /greeting: invalid value 42/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('configValidators: a key no mod declares is unknown; a declared key with a bad value is refused', async () => {
  const mod = { 'mods/a.js': INSPECT_MOD };
  const bad = await startFailing(mod, { greeting: 42 });
  assert.equal(bad.code, 78);
  assert.match(bad.stderr, /greeting: invalid value 42 \(rejected by the mod that declares this key\)/);
  const unknown = await startFailing({ 'mods/.keep': '' }, { greeting: 'hello' });
  assert.equal(unknown.code, 78);
  assert.match(unknown.stderr, /greeting: unknown key/);
});

test('a reload with a broken mod keeps the old workers serving', async () => {
  const srv = await startServer({ config: { modsDirectory: 'mods' }, files: { '../mods/a.js': orderMod('a'), 'page.html': 'x' } });
  try {
    fs.writeFileSync(path.join(srv.dir, 'mods', 'b.js'), 'module.exports = (;');
    const since = srv.stderr().length;
    srv.signal('SIGHUP');
    await srv.waitForLog(/reload failed, still serving/, 'stderr', since);
    const res = await request(`${srv.url}/page.html`, { agent: false });
    assert.equal(res.status, 200);
    assert.equal(res.headers['x-order'], 'a,');
  } finally {
    await srv.stop();
  }
});

test('a changed mod is picked up after SIGHUP', async () => {
  const srv = await startServer({ config: { modsDirectory: 'mods' }, files: { '../mods/a.js': orderMod('a'), 'page.html': 'x' } });
  try {
    fs.writeFileSync(path.join(srv.dir, 'mods', 'a.js'), orderMod('a2'));
    const since = srv.stderr().length;
    srv.signal('SIGHUP');
    await srv.waitForLog(/reload complete/, 'stderr', since);
    const res = await request(`${srv.url}/page.html`, { agent: false });
    assert.equal(res.headers['x-order'], 'a2,');
  } finally {
    await srv.stop();
  }
});
