'use strict';
// What a worker does not load unless its config needs it: the reverse proxy (with the http/https
// agents and tls it brings) without `proxy` rules, the PHP/CGI gateway without `fastcgi` or `cgi`
// rules, busboy without server-side JavaScript, node:crypto without head/foot wrapping or scripts
// (users, rate limits and ACME load it at their first use). Each
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
// that what loading the config needs is not counted).
function loadedAfterBuilding(config, files = {}) {
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
      const config = JSON.parse(require('node:fs').readFileSync(${JSON.stringify(completedFile)}, 'utf8'));
      const quiet = { info() {}, warn() {}, error() {} };
      require(${JSON.stringify(path.join(ROOT, 'lib', 'process', 'worker.js'))});
      require(${JSON.stringify(path.join(ROOT, 'lib', 'net', 'listeners.js'))}).createListeners(config, { site() {}, httpsRedirect() {}, connect() {} });
      require(${JSON.stringify(path.join(ROOT, 'lib', 'pipeline'))}).createPipeline(config, { log: quiet, configFile: ${JSON.stringify(configFile)} });
      console.log(JSON.stringify({ files: Object.keys(require.cache), builtins: process.moduleLoadList }));`;
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
