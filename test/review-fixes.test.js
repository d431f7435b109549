'use strict';
// Behaviours fixed after the review of the whole change: --check knows the keys mods declare,
// and Vary is added to, never overwritten.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { runSvr, startServer, request, makeTempDir, writeFiles } = require('./support/helpers');

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

test('an error page adds Accept to a Vary from customHeaders instead of replacing it', async () => {
  const server = await startServer({ config: { customHeaders: { Vary: 'Origin' } }, files: { 'index.html': 'x' } });
  try {
    const res = await request(`${server.url}/missing.html`);
    assert.equal(res.status, 404);
    assert.equal(res.headers.vary, 'Origin, Accept');
  } finally {
    await server.stop();
  }
});
