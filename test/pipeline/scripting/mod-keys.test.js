'use strict';
// readModKeys without a child process when the mods directory holds no mod (a Node
// process costs ~85 ms of CPU at every start). A 1 ms time limit would fail any child.
const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { readModKeys } = require('../../../lib/pipeline/scripting/mod-keys');

function configWithMods(files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-mod-keys-'));
  const mods = path.join(dir, 'mods');
  fs.mkdirSync(mods);
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(mods, name), text);
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ modsDirectory: 'mods' }));
  return { dir, mods, configFile };
}

test('no mod: the report is made without a child, documentation named as before', async (t) => {
  const { dir, mods, configFile } = configWithMods({ 'README.md': '# mods\n', 'notes.bin': '' });
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const report = await readModKeys(configFile, { timeoutMs: 1 });
  assert.deepStrictEqual(report.errors, []);
  assert.deepStrictEqual(report.validators, {});
  assert.deepStrictEqual(report.infos, [`${mods}: README.md: documentation, not mods`]);
  assert.equal(report.warnings.length, 1);
  assert.match(report.warnings[0], /ignored notes\.bin \(not a mod/);
});

test('a mod present: the child still loads it (so a 1 ms limit is exceeded)', async (t) => {
  const { dir, configFile } = configWithMods({ 'a.js': 'module.exports = function mod(req, res, logFacility, config, next) { next(); };\n' });
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const report = await readModKeys(configFile, { timeoutMs: 1 });
  assert.equal(report.errors.length, 1);
  assert.match(report.errors[0], /took longer than 1 ms \(modsLoadTimeout\)/);
});

test('a configured mods directory that does not exist: the child words the error as before', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-mod-keys-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ modsDirectory: 'missing' }));
  const report = await readModKeys(configFile);
  assert.equal(report.errors.length, 1);
  assert.match(report.errors[0], /cannot read the mods directory \(ENOENT\)/);
});
