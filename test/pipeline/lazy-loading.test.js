'use strict';
// What a worker does not load unless its config needs it: the reverse proxy (with the http/https
// agents and tls it brings) without `proxy` rules, the PHP/CGI gateway without `fastcgi` or `cgi`
// rules, busboy without server-side JavaScript. Each
// case builds the pipeline in a fresh process and reports what is in its module cache.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { makeTempDir } = require('../support/helpers');

const ROOT = path.join(__dirname, '..', '..');

// The modules loaded after createPipeline(config), the config completed as svr loads it.
function loadedAfterBuilding(config, files = {}) {
  const dir = makeTempDir('svr-lazy-');
  try {
    const web = path.join(dir, 'web'); // svr refuses a web root holding its config
    fs.mkdirSync(web);
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(web, name), text);
    const configFile = path.join(dir, 'svr-config.json');
    fs.writeFileSync(configFile, JSON.stringify({ ...config, wwwroot: 'web', stateDirectory: 'state' }));
    const script = `
      const { config, errors } = require(${JSON.stringify(path.join(ROOT, 'lib', 'config', 'load.js'))}).loadConfig(${JSON.stringify(configFile)});
      if (errors.length) throw new Error(errors.join('\\n'));
      const quiet = { info() {}, warn() {}, error() {} };
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

test('a static site loads neither the proxy (nor https) nor busboy', () => {
  const loaded = loadedAfterBuilding({}, { 'index.html': 'hi' });
  assert.equal(hasProxy(loaded), false);
  assert.equal(hasGateway(loaded), false);
  assert.equal(hasHttps(loaded), false);
  assert.equal(hasBusboy(loaded), false);
});

test('proxy rules load the proxy; a serverSideScript.js loads busboy', () => {
  assert.equal(hasProxy(loadedAfterBuilding({ proxy: [{ path: '/api/', upstreams: ['http://127.0.0.1:9'] }] })), true);
  assert.equal(hasBusboy(loadedAfterBuilding({}, { 'serverSideScript.js': 'res.end("hi");' })), true);
});

test('fastcgi or cgi rules load the gateway', () => {
  assert.equal(hasGateway(loadedAfterBuilding({ fastcgi: [{ upstream: '127.0.0.1:9000' }] })), true);
  assert.equal(hasGateway(loadedAfterBuilding({ cgi: [{ path: '/cgi-bin/' }] })), true);
});
