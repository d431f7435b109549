'use strict';
// SVR.JS material runs unmodified: the working directory is the web root, the
// script's __dirname is SVR.JS's temp/, legacy .tar.gz and unpacked Mod-constructor mods,
// forward-proxy mods (absolute-form and CONNECT), upgrades through a mod, the mod environment
// (process.messageEventListeners and friends), forgiving responses, and archive safety.
// Every fixture is written here, in SVR.JS's formats; none is copied from SVR.JS or its mods.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const tar = require('tar');
const { startServer, request, runSvr, makeTempDir, writeFiles, getFreePort } = require('../../support/helpers');
const { startPipeline } = require('../../support/pipeline');

// ---- fixtures ------------------------------------------------------------------------------

// A serverSideScript.js in the shape of SVR.JS's shipped one and its docs' page.svr example:
// a counter kept in __dirname + "/../temp/", a template read relative to the working directory.
const SCRIPT = String.raw`
disableEndElseCallbackExecute = true;
var headers = getCustomHeaders();
headers["Content-Type"] = "text/html; charset=utf-8";
if (!fs.existsSync(__dirname + "/../temp/visits")) fs.writeFileSync(__dirname + "/../temp/visits", "0");
if (href == "/count.svr") {
  fs.readFile(__dirname + "/../temp/visits", function (err, data) {
    if (err) { callServerError(500, err); return; }
    var n = parseInt(data.toString()) + 1;
    fs.writeFile(__dirname + "/../temp/visits", String(n), function () {
      res.writeHead(200, "OK", headers);
      res.end("visits: " + n);
    });
  });
} else if (href == "/page.svr") {
  if (!fs.existsSync(".template")) { callServerError(500, new Error(".template file missing")); return; }
  fs.readFile(".template", function (err, template) {
    if (err) { callServerError(500, err); return; }
    var id = uobject.query.id || "index";
    if (!/^[a-z]+$/.test(id) || !fs.existsSync("pages/" + id + ".html")) { callServerError(404); return; }
    fs.readFile("pages/" + id + ".html", function (err2, page) {
      if (err2) { callServerError(500, err2); return; }
      res.writeHead(200, "OK", headers);
      res.end(template.toString().replace("{content}", page.toString()));
    });
  });
} else if (href == "/") {
  redirect("/page.svr");
} else if (href == "/twice.svr") {
  var same = res.writeHead(200, "OK", { "Content-Type": "text/plain" }) === res;
  res.writeHead(500);
  res.end("done " + same);
} else if (href == "/late.svr") {
  setTimeout(function () { res.setHeader("X-Late", "1"); res.writeHead(200, headers); res.write("x"); res.end("late"); }, 5);
  elseCallback();
} else if (href == "/where.svr") {
  res.writeHead(200, { "Content-Type": "application/json" });
  res.end(JSON.stringify({ cwd: process.cwd(), dirname: __dirname, search: search, query: uobject.query,
    pkg: require("local-pkg"), hexstrbase64: typeof hexstrbase64, version: configJSON.version, productName: configJSON.productName,
    host: [checkHostname("example.com:8080"), checkHostname("example.com"), checkHostname("*.com")] }));
} else {
  elseCallback();
}
`;

// A legacy (SVR.JS 3.x) mod: a Mod constructor, callback() and proxyCallback() returning the
// handlers; it is also a forward proxy (absolute-form requests and CONNECT tunnels).
const LEGACY_INDEX = String.raw`
var http = require("http");
var net = require("net");
function Mod() { this.instances = (Mod.count = (Mod.count || 0) + 1); }
Mod.prototype.callback = function (req, res, serverconsole, responseEnd, href, ext, uobject, search,
    defaultpage, users, page404, head, foot, fd, elseCallback, configJSON, callServerError,
    getCustomHeaders, origHref, redirect, parsePostData, authUser) {
  var self = this;
  return function () {
    if (req.isProxy) {
      var target = new URL(req.url);
      var upstream = http.request({ host: target.hostname, port: target.port, path: target.pathname, method: req.method, headers: { "x-via": "legacy" } }, function (reply) {
        res.writeHead(reply.statusCode, { "Content-Type": "text/plain", "X-Proxied-By": "legacy-test" });
        reply.pipe(res);
      });
      upstream.on("error", function (e) { callServerError(502, "legacy-test/1.2.3", e); });
      upstream.end();
      return;
    }
    if (href == "/legacy.svr") {
      res.writeHead(200, "OK", { "Content-Type": "application/json" });
      res.end(JSON.stringify({ href: href, ext: ext, search: search, query: uobject.query, defaultpage: defaultpage,
        fd: fd, origHref: origHref, instances: self.instances, version: configJSON.version, cwd: process.cwd(),
        hasHelpers: [typeof responseEnd, typeof callServerError, typeof getCustomHeaders, typeof redirect, typeof parsePostData].join() }));
      return;
    }
    if (href == "/legacy-error.svr") { callServerError(403, "legacy-test/1.2.3"); return; }
    if (href == "/legacy-post.svr") { parsePostData(function (fields) { responseEnd(JSON.stringify(fields)); }); return; }
    elseCallback();
  };
};
Mod.prototype.proxyCallback = function (req, socket, head, configJSON, serverconsole, elseCallback) {
  return function () {
    var parts = req.url.split(":");
    var upstream = net.connect(Number(parts[1]), parts[0], function () {
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head && head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on("error", function () { socket.end("HTTP/1.1 502 Bad Gateway\r\n\r\n"); });
  };
};
module.exports = Mod;
`;
const LEGACY_INFO = JSON.stringify({ name: 'legacy-test', version: '1.2.3' });

// A 4.x mod: exchanges a message with "the primary" through process.messageEventListeners, echoes
// WebSocket frames, and reports the mod environment.
const MODERN_MOD = String.raw`
const crypto = require('crypto');
module.exports = function (req, res, logFacilities, config, next) {
  const pathname = req.parsedURL.pathname;
  if (pathname === '/ping.svr') {
    const onMessage = (message) => {
      if (message !== '\x14MODPONG') return;
      process.removeListener('message', onMessage);
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('pong');
    };
    process.on('message', onMessage);
    process.send('\x12MODPING');
    return;
  }
  if (pathname === '/echo' && String(req.headers.upgrade).toLowerCase() === 'websocket') {
    const accept = crypto.createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
    const socket = req.socket;
    socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ' + accept + '\r\n\r\n');
    socket.on('data', (frame) => {
      const length = frame[1] & 0x7f;
      const mask = frame.subarray(2, 6);
      const payload = Buffer.from(frame.subarray(6, 6 + length).map((byte, i) => byte ^ mask[i % 4]));
      socket.write(Buffer.concat([Buffer.from([0x81, payload.length]), payload]));
    });
    return;
  }
  if (pathname === '/env.svr') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ svrjs: process.versions.svrjs, dirname: process.dirname, filename: process.filename,
      port: process.serverConfig.port, reqcounter: process.reqcounter, cwd: process.cwd(), isProxy: req.isProxy,
      listeners: process.messageEventListeners.length, malformed: process.malformedcounter }));
    return;
  }
  if (pathname === '/rewrite.svr') return req.rewriteURL('/page.txt', next);
  if (pathname === '/bad-rewrite.svr') return req.rewriteURL('/a/../../etc/passwd', next);
  next();
};
module.exports.modInfo = { name: 'modern-test', version: '4.0.0' };
module.exports.commands = { hello: () => {} };
process.messageEventListeners.push((worker, serverconsole) => (message) => {
  if (message === '\x12MODPING') worker.send('\x14MODPONG');
});
`;

// A .tar.gz made here from { name: text }, returned as a Buffer. links: { name: target } become
// symbolic links; preservePaths keeps names such as "../x" as they are.
function packArchive(files, { preservePaths = false, links = {} } = {}) {
  const staging = makeTempDir('svr-tar-');
  const inside = path.join(staging, 'in');
  fs.mkdirSync(inside);
  writeFiles(inside, files);
  for (const [name, target] of Object.entries(links)) fs.symlinkSync(target, path.join(inside, name));
  const file = path.join(staging, 'mod.tar.gz');
  tar.c({ gzip: true, file, cwd: inside, sync: true, preservePaths, portable: true }, [...Object.keys(files), ...Object.keys(links)]);
  const buffer = fs.readFileSync(file);
  fs.rmSync(staging, { recursive: true, force: true });
  return buffer;
}

const LEGACY_ARCHIVE = packArchive({ 'index.js': LEGACY_INDEX, 'mod.info': LEGACY_INFO });

// A site: the script and template pages in the web root; in the mods directory the legacy mod
// packed as .tar.gz, the 4.x mod and a README.
function siteFiles() {
  return {
    'serverSideScript.js': SCRIPT,
    '.template': '<main>{content}</main>',
    'pages/index.html': 'home page',
    'pages/about.html': 'about us',
    'page.txt': 'a static page',
    'node_modules/local-pkg/index.js': 'module.exports = "found from the web root";',
    '../mods/10-legacy.tar.gz': LEGACY_ARCHIVE,
    '../mods/20-modern.js': MODERN_MOD,
    '../mods/README.md': 'notes about the mods',
    '../mods/notes.json': '{}',
    '../mods/old.zip': 'PK',
  };
}

const SITE_CONFIG = { modsDirectory: 'mods', stateDirectory: 'state', maxPostDataSize: 10000, customHeaders: { 'X-Site': 'yes' } };

let site;
let backend;
test.before(async () => {
  backend = http.createServer((req, res) => res.end(`backend saw ${req.method} ${req.url} via ${req.headers['x-via']}`));
  await new Promise((resolve) => backend.listen(0, '127.0.0.1', resolve));
  site = await startServer({ config: { ...SITE_CONFIG, workers: 2 }, files: siteFiles() });
});
test.after(async () => {
  await site.stop();
  backend.close();
});

// Raw HTTP/1.1 over a socket: resolves with everything the server sent until it closed or
// `until` matched.
function rawExchange(port, text, { until, timeoutMs = 5000 } = {}) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    let received = '';
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`no complete answer; got: ${JSON.stringify(received)}`)); }, timeoutMs);
    const finish = () => { clearTimeout(timer); socket.destroy(); resolve(received); };
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (until && until.test(received)) finish();
    });
    socket.on('end', finish);
    socket.on('error', (error) => { clearTimeout(timer); reject(error); });
  });
}

// ---- (a) serverSideScript.js as SVR.JS runs it ----------------------------------------------

test("the script's __dirname is SVR.JS's temp/ in the state directory: a counter in __dirname/../temp works", async () => {
  const first = await request(`${site.url}/count.svr`);
  assert.equal(first.status, 200);
  const n = Number(/visits: (\d+)/.exec(first.text)[1]);
  const second = await request(`${site.url}/count.svr`);
  assert.match(second.text, /visits: \d+/);
  assert.ok(Number(/visits: (\d+)/.exec(second.text)[1]) > n - 1);
  assert.ok(fs.existsSync(path.join(site.dir, 'state', 'temp', 'visits')), 'the file is in <state>/temp');
  const where = JSON.parse((await request(`${site.url}/where.svr`)).text);
  assert.equal(where.dirname, path.join(site.dir, 'state', 'temp'));
  assert.equal(fs.realpathSync(where.cwd), fs.realpathSync(site.root), 'the working directory is the web root');
  assert.equal(where.pkg, 'found from the web root', 'a package not found from temp/ is looked for from the script\'s directory');
  assert.equal(where.hexstrbase64, 'undefined');
  assert.equal(where.version, require('../../../package.json').version);
  assert.equal(where.productName, 'svr');
});

test('the docs page.svr example (a .template read relative to the working directory) works', async () => {
  const home = await request(`${site.url}/page.svr`);
  assert.equal(home.status, 200);
  assert.equal(home.text, '<main>home page</main>');
  assert.equal((await request(`${site.url}/page.svr?id=about`)).text, '<main>about us</main>');
  assert.equal((await request(`${site.url}/page.svr?id=nothere`)).status, 404);
  const root = await request(`${site.url}/`);
  assert.equal(root.status, 301);
  assert.equal(root.headers.location, '/page.svr');
  assert.equal((await request(`${site.url}/page.txt`)).text, 'a static page', 'static files pass through the script');
});

test('search is null without a query; a repeated key keeps its last value; checkHostname with a port compares the port', async () => {
  const plain = JSON.parse((await request(`${site.url}/where.svr`, { headers: { host: 'example.com:8080' } })).text);
  assert.equal(plain.search, null);
  assert.deepEqual(plain.host, [true, true, true], '"example.com:8080" matches as in SVR.JS; "example.com" and "*.com" match any port (SVR.JS: no)');
  const otherPort = JSON.parse((await request(`${site.url}/where.svr`, { headers: { host: 'example.com:9090' } })).text);
  assert.deepEqual(otherPort.host, [false, true, true]);
  const repeated = JSON.parse((await request(`${site.url}/where.svr?a=1&a=2`, { headers: { host: 'www.example.com' } })).text);
  assert.equal(repeated.search, '?a=1&a=2');
  assert.deepEqual(repeated.query, { a: '2' });
  assert.deepEqual(repeated.host, [false, false, true]);
});

test('a second res.writeHead is a warning naming the script and URL, not a cut connection; it returns res', async () => {
  const since = site.stderr().length;
  const res = await request(`${site.url}/twice.svr`);
  assert.equal(res.status, 200);
  assert.equal(res.text, 'done true');
  await site.waitForLog(/serverSideScript\.js: res\.writeHead called again for GET \/twice\.svr; ignored/, 'stderr', since);
});

test('writes after the response ended (async script without disableEndElseCallbackExecute) warn and never recycle a worker', async () => {
  const since = site.stderr().length;
  const results = [];
  for (let i = 0; i < 15; i++) {
    results.push((await request(`${site.url}/late.svr`)).status);
    results.push((await request(`${site.url}/page.txt`)).status);
  }
  assert.deepEqual(results, Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? 404 : 200)));
  await site.waitForLog(/res\.writeHead called again for GET \/late\.svr; ignored/, 'stderr', since);
  await site.waitForLog(/serverSideScript\.js: res\.setHeader\("X-Late"\) after the headers were sent for GET \/late\.svr; ignored/, 'stderr', since);
  await site.waitForLog(/res\.write after the response ended for GET \/late\.svr; ignored/, 'stderr', since);
  const later = site.stderr().slice(since).join('\n');
  assert.doesNotMatch(later, /uncaught exception|recycling/);
});

// ---- (b) legacy mods ------------------------------------------------------------------------

test('a legacy .tar.gz mod is extracted and called with the 22-argument callback contract; mod.info names it', async () => {
  assert.ok(site.stderr().some((line) => /server-side JavaScript: legacy-test\/1\.2\.3 \(legacy\), modern-test\/4\.0\.0, /.test(line)), site.stderr().join('\n'));
  const res = await request(`${site.url}/legacy.svr?x=1&x=2`);
  assert.equal(res.status, 200);
  const seen = JSON.parse(res.text);
  assert.equal(seen.href, '/legacy.svr');
  assert.equal(seen.ext, 'svr');
  assert.equal(seen.search, '?x=1&x=2');
  assert.deepEqual(seen.query, { x: '2' });
  assert.equal(seen.defaultpage, 'index.html');
  assert.equal(seen.fd, '');
  assert.equal(seen.origHref, '/legacy.svr');
  assert.equal(seen.instances, 1, 'one Mod instance per worker, made at load');
  assert.equal(seen.hasHelpers, 'function,function,function,function,function');
  assert.equal(fs.realpathSync(seen.cwd), fs.realpathSync(site.root));
  assert.equal((await request(`${site.url}/legacy-error.svr`)).status, 403);
  const posted = await request(`${site.url}/legacy-post.svr`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=b' });
  assert.deepEqual(JSON.parse(posted.text), { a: 'b' });
  assert.equal((await request(`${site.url}/legacy-post.svr`, { method: 'PUT', body: 'a=b' })).status, 405);
});

test('legacy archives are unpacked into a per-process directory under the state directory', async () => {
  const temp = path.join(site.dir, 'state', 'temp');
  const dirs = fs.readdirSync(temp).filter((name) => /^\.modloader_w\d+$/.test(name));
  assert.ok(dirs.length >= 2, `one per worker: ${dirs.join(', ')}`);
  for (const dir of dirs) assert.ok(fs.existsSync(path.join(temp, dir, '10-legacy.tar.gz', 'index.js')));
});

test('an unpacked legacy mod (a folder whose index.js exports a Mod constructor) is wrapped, not called as a handler', async () => {
  const srv = await startPipeline({
    config: { modsDirectory: 'mods', stateDirectory: 'state' },
    files: { 'page.txt': 'static', '../mods/legacy/index.js': LEGACY_INDEX, '../mods/legacy/mod.info': LEGACY_INFO },
  });
  try {
    const res = await request(`${srv.url}/legacy.svr`, { timeout: 5000 });
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.text).href, '/legacy.svr');
    assert.equal((await request(`${srv.url}/page.txt`, { timeout: 5000 })).text, 'static');
  } finally {
    await srv.stop();
  }
});

test('nothing in the mods directory is ignored silently: a README is named, another file gets a warning, an .mjs stops the start', async () => {
  assert.ok(site.stderr().some((line) => /info primary: .*mods: README\.md: documentation, not mods/.test(line)), site.stderr().join('\n'));
  assert.ok(site.stderr().some((line) => /warn primary: .*mods: ignored notes\.json, old\.zip \(not a mod/.test(line)), site.stderr().join('\n'));
  assert.ok(site.stderr().some((line) => /20-modern\.js: console commands hello are not available/.test(line)));
  const dir = makeTempDir();
  writeFiles(dir, { 'web/index.html': 'x', 'mods/a.mjs': 'export default 1;' });
  fs.writeFileSync(path.join(dir, 'svr-config.json'), JSON.stringify({ port: await getFreePort(), wwwroot: 'web', modsDirectory: 'mods', stateDirectory: 'state' }));
  const result = await runSvr(['--check', '--config', path.join(dir, 'svr-config.json')]);
  fs.rmSync(dir, { recursive: true, force: true });
  assert.equal(result.code, 1);
  assert.match(result.stderr, /a\.mjs: cannot load the mod: an ES module/);
});

// ---- archive safety -------------------------------------------------------------------------

async function checkWithArchive(archive) {
  const dir = makeTempDir();
  writeFiles(dir, { 'web/index.html': 'x', 'mods/bad.tar.gz': archive });
  fs.writeFileSync(path.join(dir, 'svr-config.json'), JSON.stringify({ port: await getFreePort(), wwwroot: 'web', modsDirectory: 'mods', stateDirectory: 'state' }));
  const result = await runSvr(['--check', '--config', path.join(dir, 'svr-config.json')]);
  return { dir, result };
}

test('a tar archive that tries to escape its directory is refused, and nothing is written outside', async () => {
  const escaping = packArchive({ 'index.js': LEGACY_INDEX, '../../../escaped.txt': 'outside' }, { preservePaths: true });
  const { dir, result } = await checkWithArchive(escaping);
  try {
    assert.equal(result.code, 1);
    assert.match(result.stderr, /bad\.tar\.gz: cannot load the mod: refused: "\.\.\/\.\.\/\.\.\/escaped\.txt" has a "\.\." segment/);
    const found = [];
    const walk = (d) => { for (const e of fs.readdirSync(d, { withFileTypes: true })) { if (e.isDirectory()) walk(path.join(d, e.name)); else found.push(e.name); } };
    walk(dir);
    assert.ok(!found.includes('escaped.txt'), found.join(', '));
    assert.ok(!fs.existsSync(path.join(dir, '..', 'escaped.txt')));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a tar archive with a symbolic link is refused', async () => {
  const linking = packArchive({ 'index.js': LEGACY_INDEX }, { links: { 'passwd': '/etc/passwd' } });
  const { dir, result } = await checkWithArchive(linking);
  fs.rmSync(dir, { recursive: true, force: true });
  assert.equal(result.code, 1);
  assert.match(result.stderr, /bad\.tar\.gz: cannot load the mod: refused: "passwd" is a SymbolicLink to "\/etc\/passwd"/);
});

test('a file that is not a tar.gz archive is an error naming it', async () => {
  const { dir, result } = await checkWithArchive(Buffer.from('not gzip at all'));
  fs.rmSync(dir, { recursive: true, force: true });
  assert.equal(result.code, 1);
  assert.match(result.stderr, /bad\.tar\.gz: cannot load the mod: not a readable \.tar\.gz archive/);
});

test('archive limits: entry count, unpacked size and archive size are checked before extracting', () => {
  const { extractModArchive } = require('../../../lib/pipeline/scripting/legacy-archive');
  const dir = makeTempDir();
  try {
    const file = path.join(dir, 'm.tar.gz');
    fs.writeFileSync(file, packArchive({ 'index.js': 'x'.repeat(100), 'mod.info': '{}', 'b.txt': 'b' }));
    assert.throws(() => extractModArchive(file, path.join(dir, 'out1'), { entries: 2 }), /3 entries, more than the 2 allowed/);
    assert.throws(() => extractModArchive(file, path.join(dir, 'out2'), { totalBytes: 50 }), /103 bytes unpacked, more than the 50 allowed/);
    assert.throws(() => extractModArchive(file, path.join(dir, 'out3'), { archiveBytes: 10 }), /more than the 10 allowed/);
    assert.ok(!fs.existsSync(path.join(dir, 'out1')) && !fs.existsSync(path.join(dir, 'out2')), 'nothing extracted');
    extractModArchive(file, path.join(dir, 'out4'));
    assert.equal(fs.readFileSync(path.join(dir, 'out4', 'b.txt'), 'utf8'), 'b');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// ---- (c) mods never run in the primary ------------------------------------------------------

// A mod that never finishes loading: it blocks its thread for a minute (without spinning, so the
// machine's other tests keep the CPU).
const HANG = 'Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000);';

test('a mod that hangs while loading fails --check with its own message (modsLoadTimeout)', async () => {
  const dir = makeTempDir();
  writeFiles(dir, { 'web/index.html': 'x', 'mods/hang.js': `${HANG}\nmodule.exports = (req, res, l, c, next) => next();` });
  fs.writeFileSync(path.join(dir, 'svr-config.json'), JSON.stringify({ port: await getFreePort(), wwwroot: 'web', modsDirectory: 'mods', stateDirectory: 'state', modsLoadTimeout: 1000 }));
  const started = Date.now();
  const result = await runSvr(['--check', '--config', path.join(dir, 'svr-config.json')]);
  fs.rmSync(dir, { recursive: true, force: true });
  assert.equal(result.code, 1);
  assert.match(result.stderr, /took longer than 1000 ms \(modsLoadTimeout\); a mod hangs while loading/);
  assert.ok(Date.now() - started < 15000);
});

test('a reload to a mod that hangs while loading fails with its message; the workers keep serving and the primary runs', async () => {
  const srv = await startServer({
    config: { modsDirectory: 'mods', stateDirectory: 'state', modsLoadTimeout: 5000 }, // a busy machine's start fits
    files: { 'page.txt': 'static', '../mods/ok.js': 'module.exports = (req, res, l, c, next) => next();\nmodule.exports.modInfo = { name: "ok", version: "1" };' },
  });
  try {
    fs.writeFileSync(path.join(srv.dir, 'mods', 'ok.js'), HANG);
    const since = srv.stderr().length;
    srv.signal('SIGHUP');
    await srv.waitForLog(/reload failed, still serving with the previous config/, 'stderr', since);
    await srv.waitForLog(/took longer than 5000 ms \(modsLoadTimeout\)/, 'stderr', since);
    assert.equal((await request(`${srv.url}/page.txt`)).text, 'static');
    assert.equal(srv.proc.exitCode, null, 'the primary is still running');
  } finally {
    await srv.stop();
  }
});

test('--check with a mod whose load-time timer throws: its configValidators still validate the key (read in a child process)', async () => {
  const dir = makeTempDir();
  writeFiles(dir, {
    'web/index.html': 'x',
    'mods/keys.js': 'module.exports = (req, res, l, c, next) => next();\nmodule.exports.configValidators = { greeting: (v) => typeof v === "string" };\nsetTimeout(() => { throw new Error("load-time timer"); }, 0);',
  });
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ port: await getFreePort(), wwwroot: 'web', modsDirectory: 'mods', stateDirectory: 'state', greeting: 'hi' }));
  const ok = await runSvr(['--check', '--config', configFile]);
  assert.equal(ok.code, 0, ok.stderr);
  fs.writeFileSync(configFile, JSON.stringify({ port: await getFreePort(), wwwroot: 'web', modsDirectory: 'mods', stateDirectory: 'state', greeting: 5 }));
  const bad = await runSvr(['--check', '--config', configFile]);
  fs.rmSync(dir, { recursive: true, force: true });
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /greeting/);
});

// ---- (d) proxy requests, CONNECT, upgrades ---------------------------------------------------

test('a forward-proxy mod gets absolute-form requests (req.url absolute, req.isProxy) and answers them', async () => {
  const port = backend.address().port;
  const answer = await rawExchange(site.port, `GET http://127.0.0.1:${port}/fwd HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
  assert.match(answer, /^HTTP\/1\.1 200/);
  assert.match(answer, /X-Proxied-By: legacy-test/i);
  assert.match(answer, /backend saw GET \/fwd via legacy/);
  assert.doesNotMatch(answer, /X-Site/i, 'custom headers do not apply to proxy requests (as in SVR.JS)');
  assert.equal((await request(`${site.url}/page.txt`)).headers['x-site'], 'yes', 'they do to the site');
});

test('CONNECT reaches the legacy proxyCallback and tunnels to the backend', async () => {
  const port = backend.address().port;
  const socket = net.connect(site.port, '127.0.0.1');
  let received = '';
  const done = new Promise((resolve, reject) => {
    socket.on('data', (chunk) => {
      received += chunk.toString();
      if (/^HTTP\/1\.1 200 Connection Established\r\n\r\n/.test(received) && !socket.sentInner) {
        socket.sentInner = true;
        socket.write(`GET /tunnelled HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Via: tunnel\r\nConnection: close\r\n\r\n`);
      }
      if (/backend saw GET \/tunnelled via tunnel/.test(received)) resolve();
    });
    socket.on('error', reject);
    setTimeout(() => reject(new Error(`tunnel incomplete: ${received}`)), 5000);
  });
  socket.write(`CONNECT 127.0.0.1:${port} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
  await done;
  socket.destroy();
});

test('without a proxy mod, CONNECT gets a clean 501 and absolute-form requests are served by path', async () => {
  const srv = await startServer({ config: { stateDirectory: 'state' }, files: { 'page.txt': 'static' } });
  try {
    const answer = await rawExchange(srv.port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    assert.match(answer, /^HTTP\/1\.1 501 Not Implemented\r\n/);
    const byPath = await rawExchange(srv.port, `GET http://127.0.0.1:${srv.port}/page.txt HTTP/1.1\r\nHost: 127.0.0.1:${srv.port}\r\nConnection: close\r\n\r\n`);
    assert.match(byPath, /^HTTP\/1\.1 200/);
    assert.match(byPath, /static$/);
  } finally {
    await srv.stop();
  }
});

test('a WebSocket upgrade reaches a mod, which echoes frames; an Upgrade nobody takes is answered as a normal request', async () => {
  const key = crypto.randomBytes(16).toString('base64');
  const socket = net.connect(site.port, '127.0.0.1');
  let received = Buffer.alloc(0);
  const echoed = new Promise((resolve, reject) => {
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      const text = received.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return;
      if (!socket.sentFrame) {
        assert.match(text, /^HTTP\/1\.1 101 Switching Protocols/);
        const accept = crypto.createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
        assert.match(text, new RegExp(`Sec-WebSocket-Accept: ${accept.replace(/[+/]/g, '\\$&')}`));
        socket.sentFrame = true;
        const payload = Buffer.from('hello over ws');
        const mask = crypto.randomBytes(4);
        socket.write(Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, payload.map((b, i) => b ^ mask[i % 4])]));
        return;
      }
      const frame = received.subarray(end + 4);
      if (frame.length >= 2 && frame.length >= 2 + frame[1]) resolve(frame.subarray(2, 2 + frame[1]).toString());
    });
    socket.on('error', reject);
    setTimeout(() => reject(new Error(`no echo: ${received.toString('latin1')}`)), 5000);
  });
  socket.write(`GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
  assert.equal(await echoed, 'hello over ws');
  // A reset: the mod ignores the end of the stream, so after a plain close the worker would hold
  // its half of the connection until the stop forces it (shutdownTimeout, 10 s).
  socket.resetAndDestroy();
  const plain = await rawExchange(site.port, 'GET /page.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
  assert.match(plain, /^HTTP\/1\.1 200/);
  assert.match(plain, /a static page$/);
});

// ---- (e) the mod environment ----------------------------------------------------------------

test('process.messageEventListeners: a mod exchanges a message with its listener (the svrjs-mod-starter pattern)', async () => {
  for (let i = 0; i < 4; i++) {
    const res = await request(`${site.url}/ping.svr`, { timeout: 5000 });
    assert.equal(res.status, 200);
    assert.equal(res.text, 'pong');
  }
});

test('process.versions.svrjs, serverConfig, dirname, filename, reqcounter; req.rewriteURL; req.isProxy', async () => {
  const env = JSON.parse((await request(`${site.url}/env.svr`)).text);
  assert.equal(env.svrjs, '4.5.0');
  assert.equal(env.dirname, path.join(site.dir, 'state'));
  assert.equal(env.filename, path.join(__dirname, '..', '..', '..', 'svr.js'));
  assert.equal(env.port, site.port);
  assert.ok(env.reqcounter >= 1);
  assert.equal(env.isProxy, false);
  assert.equal(env.listeners, 1);
  assert.equal(env.malformed, 0, 'malformed requests never reach mods: always 0');
  assert.equal((await request(`${site.url}/rewrite.svr`)).text, 'a static page');
  assert.equal((await request(`${site.url}/bad-rewrite.svr`)).status, 403);
});

test('mod code never runs in the primary: every process that loads a mod, at start and on reload, is another one', async () => {
  const marker = String.raw`require('fs').appendFileSync(process.env.SVR_TEST_MARKER, process.pid + '\n');
module.exports = (req, res, l, c, next) => next();
module.exports.modInfo = { name: 'marker', version: '1' };`;
  const dir = makeTempDir();
  const markerFile = path.join(dir, 'loaded-by');
  const srv = await startServer({
    config: { modsDirectory: 'mods', stateDirectory: 'state', workers: 2 },
    files: { 'page.txt': 'static', '../mods/marker.js': marker },
    env: { SVR_TEST_MARKER: markerFile },
  });
  try {
    const since = srv.stderr().length;
    srv.signal('SIGHUP');
    await srv.waitForLog(/reload complete/, 'stderr', since);
    const pids = fs.readFileSync(markerFile, 'utf8').trim().split('\n').map(Number);
    assert.ok(pids.length >= 6, `2 key readers + 4 workers loaded it: ${pids.join(', ')}`);
    assert.ok(!pids.includes(srv.pid), `the primary (${srv.pid}) never loaded it: ${pids.join(', ')}`);
    assert.equal((await request(`${srv.url}/page.txt`, { agent: false })).text, 'static');
  } finally {
    await srv.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('--single-threaded: the message listeners answer in the same process; legacy mods load there too', async () => {
  const srv = await startServer({
    config: { modsDirectory: 'mods', stateDirectory: 'state' },
    files: { 'page.txt': 'static', '../mods/20-modern.js': MODERN_MOD, '../mods/10-legacy.tar.gz': LEGACY_ARCHIVE },
    args: ['--single-threaded'],
  });
  try {
    assert.equal((await request(`${srv.url}/ping.svr`, { timeout: 5000 })).text, 'pong');
    assert.equal(JSON.parse((await request(`${srv.url}/legacy.svr`)).text).href, '/legacy.svr');
    // A reload that fails (here: the script does not compile) leaves the message exchange working.
    fs.writeFileSync(path.join(srv.root, 'serverSideScript.js'), 'if (');
    const since = srv.stderr().length;
    srv.signal('SIGHUP');
    await srv.waitForLog(/reload failed, still serving with the previous config/, 'stderr', since);
    assert.equal((await request(`${srv.url}/ping.svr`, { timeout: 5000 })).text, 'pong');
    const temp = path.join(srv.dir, 'state', 'temp');
    assert.ok(fs.existsSync(path.join(temp, `.modloader_w${srv.pid}`, '10-legacy.tar.gz', 'index.js')));
    srv.signal('SIGTERM');
    await srv.exited;
    assert.ok(!fs.existsSync(path.join(temp, `.modloader_w${srv.pid}`)), 'the extraction directory is removed at exit');
  } finally {
    await srv.stop();
  }
});

test('parsePostData: a 2.2 MB multipart upload is accepted by default (SVR.JS order of magnitude), streamed to a file', async () => {
  const script = String.raw`
if (href == "/upload.svr") {
  parsePostData(function (fields, files, raw) {
    var file = files.upload;
    var data = fs.readFileSync(file.filepath);
    responseEnd(JSON.stringify({ title: fields.title, size: file.size, bytes: data.length, name: file.originalFilename,
      sum: require("crypto").createHash("sha256").update(data).digest("hex"), raw: raw === undefined }));
  });
  return;
}`;
  const srv = await startPipeline({ config: { stateDirectory: 'state' }, files: { 'serverSideScript.js': script } });
  try {
    const content = crypto.randomBytes(2200000);
    const boundary = 'svrBoundary42';
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="title"\r\n\r\nbig one\r\n`),
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="upload"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
      content,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const res = await request(`${srv.url}/upload.svr`, { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body });
    assert.equal(res.status, 200, res.text.slice(0, 200));
    const seen = JSON.parse(res.text);
    assert.deepEqual(seen, { title: 'big one', size: 2200000, bytes: 2200000, name: 'big.bin',
      sum: crypto.createHash('sha256').update(content).digest('hex'), raw: true });
  } finally {
    await srv.stop();
  }
});

test('parsePostData: a multipart body that grows over maxPostDataSize while streaming is 413', async () => {
  const boundary = 'b0undary';
  const res = await new Promise((resolve, reject) => {
    const req = http.request(`${site.url}/legacy-post.svr`, { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked' } }, (r) => {
      r.resume();
      r.on('end', () => resolve(r));
    });
    req.on('error', reject);
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="f"; filename="x.bin"\r\n\r\n`);
    req.write('z'.repeat(6000));
    req.end('z'.repeat(6000) + `\r\n--${boundary}--\r\n`);
  });
  assert.equal(res.statusCode, 413);
});

test('HTTP/2 CONNECT gets 501, and the session keeps serving', async () => {
  const http2 = require('node:http2');
  const { startTlsServer, h2Connect, h2Request } = require('../../support/tls-helpers');
  const srv = await startTlsServer({ config: { enableHTTP2: true }, files: { 'page.txt': 'over h2' } });
  const session = h2Connect(srv.httpsUrl);
  try {
    const status = await new Promise((resolve, reject) => {
      const stream = session.request({ ':method': 'CONNECT', ':authority': 'example.com:443' }, { endStream: false });
      stream.on('response', (headers) => { resolve(headers[':status']); stream.close(http2.constants.NGHTTP2_CANCEL); });
      stream.on('error', reject);
    });
    assert.equal(status, 501);
    assert.equal((await h2Request(srv.httpsUrl, '/page.txt', { session })).text, 'over h2');
  } finally {
    session.close();
    await srv.stop();
  }
});

test('head and foot are read when a worker starts (SVR.JS re-read them per request): a change shows after a reload', async () => {
  const srv = await startServer({ config: { stateDirectory: 'state' }, files: { '.head': '<h1>', '.foot': '</h1>', 'serverSideScript.js': 'if (href == "/t.svr") { responseEnd("title"); return; }' } });
  try {
    assert.equal((await request(`${srv.url}/t.svr`)).text, '<h1>title</h1>');
    fs.writeFileSync(path.join(srv.root, '.head'), '<h2>');
    assert.equal((await request(`${srv.url}/t.svr`)).text, '<h1>title</h1>', 'not re-read per request');
    const since = srv.stderr().length;
    srv.signal('SIGHUP');
    await srv.waitForLog(/reload complete/, 'stderr', since);
    assert.equal((await request(`${srv.url}/t.svr`, { agent: false })).text, '<h2>title</h1>'); // a new connection: the old worker drains
  } finally {
    await srv.stop();
  }
});

test('4.x proxy mods: proxySafe gets absolute-form requests, module.exports.proxy gets CONNECT; other mods are skipped for them', async () => {
  const proxyMod = String.raw`
module.exports = (req, res, logFacilities, config, next) => {
  if (req.isProxy) { res.writeHead(200, { 'Content-Type': 'text/plain' }).end('4.x saw ' + req.url); return; }
  next();
};
module.exports.proxySafe = true;
module.exports.proxy = (req, socket, head, logFacilities, config, next) => {
  if (!req.url.startsWith('tunnel.test:')) return next();
  socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  if (head.length) socket.write('tunnel echo: ' + head); // bytes sent along with the CONNECT
  socket.on('data', (data) => socket.write('tunnel echo: ' + data));
};
module.exports.modInfo = { name: 'proxy4', version: '1' };`;
  const plainMod = `module.exports = (req, res, l, c, next) => { res.setHeader('X-Plain', 'ran'); next(); };
module.exports.modInfo = { name: 'plain', version: '1' };`;
  // In-process: the mods' proxy handlers answer (the worker's routing to them is the site's tests').
  const srv = await startPipeline({ config: { modsDirectory: 'mods', stateDirectory: 'state' }, files: { 'page.txt': 'static', '../mods/1-plain.js': plainMod, '../mods/2-proxy.js': proxyMod } });
  try {
    const answer = await rawExchange(srv.port, 'GET http://elsewhere.test/x?y=1 HTTP/1.1\r\nHost: elsewhere.test\r\nConnection: close\r\n\r\n');
    assert.match(answer, /^HTTP\/1\.1 200/);
    assert.match(answer, /4\.x saw http:\/\/elsewhere\.test\/x\?y=1\r\n/);
    assert.doesNotMatch(answer, /X-Plain/i, 'a mod that is not proxySafe does not see proxy requests');
    assert.equal((await request(`${srv.url}/page.txt`)).headers['x-plain'], 'ran');
    const tunnel = await rawExchange(srv.port, 'CONNECT tunnel.test:443 HTTP/1.1\r\nHost: tunnel.test:443\r\n\r\nping', { until: /tunnel echo: ping/ });
    assert.match(tunnel, /^HTTP\/1\.1 200 Connection Established\r\n\r\ntunnel echo: ping/);
    const refused = await rawExchange(srv.port, 'CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n');
    assert.match(refused, /^HTTP\/1\.1 501 Not Implemented\r\n/, 'every proxy handler passed it on');
  } finally {
    await srv.stop();
  }
});
