'use strict';
// What a worker does not load unless its config needs it: the reverse proxy (with the http/https
// agents and tls it brings) without `proxy` rules, the PHP/CGI gateway without `fastcgi` or `cgi`
// rules, busboy without server-side JavaScript, node:crypto without head/foot wrapping or scripts
// (users, rate limits and ACME load it at their first use); and what it does not load before the
// first answer that needs it: zlib, the listing's collator, node:vm, perf_hooks, fs.promises. Each
// case builds the pipeline in a fresh process and reports what is in its module cache.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { makeTempDir } = require('../support/helpers');
const { loadConfig } = require('../../lib/config/load');

const ROOT = path.join(__dirname, '..', '..');

// The modules loaded after a worker's start: worker.js, its listeners and createPipeline(config),
// in a fresh process given the config as svr's primary sends it (loaded and completed here, so
// that what loading the config needs is not counted). With `request` (a URL path), the pipeline
// and the access log then answer that one request over a real socket before the list is taken:
// what a worker loads at its first answer counts too. `collators` is how many Intl.Collator
// objects were made (each brings ICU's collation data, ~3 MiB, into the process).
function loadedAfterBuilding(config, files = {}, { request = null, headers = {} } = {}) {
  const dir = makeTempDir('svr-lazy-');
  try {
    const web = path.join(dir, 'web'); // svr refuses a web root holding its config
    fs.mkdirSync(web);
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(web, name), text);
    const configFile = path.join(dir, 'svr-config.json');
    fs.writeFileSync(configFile, JSON.stringify({ ...config, wwwroot: 'web', stateDirectory: 'state' }));
    const loaded = loadConfig(configFile);
    assert.deepEqual(loaded.errors, []);
    const completedFile = path.join(dir, 'completed.json');
    fs.writeFileSync(completedFile, JSON.stringify(loaded.config)); // as the IPC message carries it
    const script = `
      let collators = 0;
      const MadeCollator = Intl.Collator;
      Intl.Collator = function Collator(...args) { collators++; return new MadeCollator(...args); };
      const config = JSON.parse(require('node:fs').readFileSync(${JSON.stringify(completedFile)}, 'utf8'));
      const quiet = { info() {}, warn() {}, error() {} };
      require(${JSON.stringify(path.join(ROOT, 'lib', 'process', 'worker.js'))});
      require(${JSON.stringify(path.join(ROOT, 'lib', 'net', 'listeners.js'))}).createListeners(config, { site() {}, httpsRedirect() {}, connect() {} });
      const pipeline = require(${JSON.stringify(path.join(ROOT, 'lib', 'pipeline'))}).createPipeline(config, { log: quiet, configFile: ${JSON.stringify(configFile)} });
      const report = (answer) => console.log(JSON.stringify({ files: Object.keys(require.cache), builtins: process.moduleLoadList, collators, answer }));
      const target = ${JSON.stringify(request)};
      if (target === null) report(null);
      else {
        const http = require('node:http');
        const logRequest = require(${JSON.stringify(path.join(ROOT, 'lib', 'access-log.js'))}).createAccessLog(config, { write() {} });
        const server = http.createServer((req, res) => { if (logRequest) logRequest(req, res); pipeline.handle(req, res); });
        server.listen(0, '127.0.0.1', () => {
          http.get({ host: '127.0.0.1', port: server.address().port, path: target, headers: ${JSON.stringify(headers)}, agent: false }, (res) => {
            res.resume();
            res.on('end', () => setImmediate(() => { server.close(); report(res.statusCode); }));
          });
        });
      }`;
    return JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim().split('\n').pop());
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const hasProxy = (loaded) => loaded.files.some((file) => file.includes(`${path.sep}pipeline${path.sep}proxy${path.sep}`));
const hasGateway = (loaded) => loaded.files.some((file) => file.includes(`${path.sep}pipeline${path.sep}gateway${path.sep}`));
const hasBusboy = (loaded) => loaded.files.some((file) => file.includes(`${path.sep}busboy${path.sep}`));
const hasHttps = (loaded) => loaded.builtins.includes('NativeModule https');
const hasCrypto = (loaded) => loaded.builtins.includes('NativeModule crypto');
const hasBuiltin = (loaded, name) => loaded.builtins.includes(`NativeModule ${name}`);
const hasSchema = (loaded) => loaded.files.some((file) => file.endsWith('svr-config.schema.json'));

// The static site of the bench (listing and access log on), once it has answered a file.
const BENCH_SITE = { enableDirectoryListing: true, enableLogging: true };
const HTML_2K = `<!doctype html><p>${'compressible text '.repeat(120)}</p>`;

test('a static site loads neither the proxy (nor https) nor busboy', () => {
  const loaded = loadedAfterBuilding({}, { 'index.html': 'hi' });
  assert.equal(hasProxy(loaded), false);
  assert.equal(hasGateway(loaded), false);
  assert.equal(hasHttps(loaded), false);
  assert.equal(hasBusboy(loaded), false);
  assert.equal(hasCrypto(loaded), false);
});

test('head/foot wrapping and a serverSideScript.js load node:crypto', () => {
  assert.equal(hasCrypto(loadedAfterBuilding({ enableIncludingHeadAndFootInHTML: true }, { 'index.html': 'hi', 'head.html': '<p>', 'foot.html': '</p>' })), true);
  assert.equal(hasCrypto(loadedAfterBuilding({}, { 'serverSideScript.js': 'res.end("hi");' })), true);
});

test('proxy rules load the proxy; a serverSideScript.js loads busboy', () => {
  assert.equal(hasProxy(loadedAfterBuilding({ proxy: [{ path: '/api/', upstreams: ['http://127.0.0.1:9'] }] })), true);
  assert.equal(hasBusboy(loadedAfterBuilding({}, { 'serverSideScript.js': 'res.end("hi");' })), true);
});

test('fastcgi or cgi rules load the gateway', () => {
  assert.equal(hasGateway(loadedAfterBuilding({ fastcgi: [{ upstream: '127.0.0.1:9000' }] })), true);
  assert.equal(hasGateway(loadedAfterBuilding({ cgi: [{ path: '/cgi-bin/' }] })), true);
});

test('a static site with listing and the access log, after its first answer, holds no zlib, vm, perf_hooks, fs.promises, config schema or collator', () => {
  const loaded = loadedAfterBuilding(BENCH_SITE, { 'index.html': 'hi', 'page.html': HTML_2K }, { request: '/page.html' });
  assert.equal(loaded.answer, 200);
  assert.equal(hasBuiltin(loaded, 'zlib'), false); // compressed answers only
  assert.equal(hasBuiltin(loaded, 'vm'), false); // serverSideScript.js only (node:module: `node -e` loads it itself)
  assert.equal(hasBuiltin(loaded, 'perf_hooks'), false); // the access log's clock
  assert.equal(hasBuiltin(loaded, 'internal/fs/promises'), false); // the file cache's reads
  assert.equal(hasSchema(loaded), false); // legacy mods' settings only
  assert.equal(loaded.collators, 0); // the first listing only
  assert.equal(hasCrypto(loaded), false);
  assert.equal(hasBuiltin(loaded, 'http2'), false); // HTTP/2 and TLS listeners only
  assert.equal(hasBuiltin(loaded, 'tls'), false);
});

test('the first listing makes the collator; the first compressed answer loads zlib; a serverSideScript.js loads vm', () => {
  const listed = loadedAfterBuilding(BENCH_SITE, { 'b.txt': 'b', 'a.txt': 'a' }, { request: '/' });
  assert.equal(listed.answer, 200);
  assert.equal(listed.collators, 1);
  const compressed = loadedAfterBuilding(BENCH_SITE, { 'page.html': HTML_2K }, { request: '/page.html', headers: { 'accept-encoding': 'gzip' } });
  assert.equal(compressed.answer, 200);
  assert.equal(hasBuiltin(compressed, 'zlib'), true);
  assert.equal(hasBuiltin(loadedAfterBuilding({}, { 'serverSideScript.js': 'res.end("hi");' }), 'vm'), true);
});

// The primary, not a worker: its rate counter (process/rate-limits/counter.js) is made at every
// start, with Redis only when rateLimitStore.redis names one.
test('the primary and its rate counter load no Redis client (ioredis) without rateLimitStore.redis', () => {
  const script = `
    const quiet = { info() {}, warn() {}, error() {} };
    require(${JSON.stringify(path.join(ROOT, 'lib', 'process', 'primary.js'))});
    const { createRateCounter } = require(${JSON.stringify(path.join(ROOT, 'lib', 'process', 'rate-limits', 'counter.js'))});
    createRateCounter({ redis: null, whenDown: 'local', timeout: 250, maxKeys: 100000 }, quiet).close();
    console.log(JSON.stringify(Object.keys(require.cache).filter((file) => file.includes('${path.sep}ioredis${path.sep}'))));`;
  const loaded = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim().split('\n').pop());
  assert.deepEqual(loaded, []);
});
