'use strict';
// What a worker does not load unless its config needs it: the reverse proxy (with the http/https
// agents and tls it brings) without `proxy` rules, busboy without server-side JavaScript. Each
// case builds the pipeline in a fresh process and reports what is in its module cache.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { makeTempDir } = require('../support/helpers');

const ROOT = path.join(__dirname, '..', '..');

// The modules loaded after createPipeline(config) with the schema's defaults under `config`.
function loadedAfterBuilding(config, files = {}) {
  const dir = makeTempDir('svr-lazy-');
  try {
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
    const script = `
      const schema = require(${JSON.stringify(path.join(ROOT, 'config', 'svr-config.schema.json'))});
      const defaults = Object.fromEntries(Object.entries(schema.properties).filter(([, p]) => p.default !== undefined).map(([k, p]) => [k, p.default]));
      const config = { ...defaults, ...${JSON.stringify(config)}, wwwroot: ${JSON.stringify(dir)}, stateDirectory: ${JSON.stringify(path.join(dir, 'state'))} };
      const quiet = { info() {}, warn() {}, error() {} };
      require(${JSON.stringify(path.join(ROOT, 'lib', 'pipeline'))}).createPipeline(config, { log: quiet, configFile: ${JSON.stringify(path.join(dir, 'svr-config.json'))} });
      console.log(JSON.stringify({ files: Object.keys(require.cache), builtins: process.moduleLoadList }));`;
    return JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim().split('\n').pop());
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const hasProxy = (loaded) => loaded.files.some((file) => file.includes(`${path.sep}pipeline${path.sep}proxy${path.sep}`));
const hasBusboy = (loaded) => loaded.files.some((file) => file.includes(`${path.sep}busboy${path.sep}`));
const hasHttps = (loaded) => loaded.builtins.includes('NativeModule https');

test('a static site loads neither the proxy (nor https) nor busboy', () => {
  const loaded = loadedAfterBuilding({}, { 'index.html': 'hi' });
  assert.equal(hasProxy(loaded), false);
  assert.equal(hasHttps(loaded), false);
  assert.equal(hasBusboy(loaded), false);
});

test('proxy rules load the proxy; a serverSideScript.js loads busboy', () => {
  assert.equal(hasProxy(loadedAfterBuilding({ proxy: [{ path: '/api/', upstreams: ['http://127.0.0.1:9'] }] })), true);
  assert.equal(hasBusboy(loadedAfterBuilding({}, { 'serverSideScript.js': 'res.end("hi");' })), true);
});
