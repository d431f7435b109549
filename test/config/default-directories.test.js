'use strict';
// Where mods and state are when the config does not say: the installed service takes mods from
// $CONFIGURATION_DIRECTORY/mods (systemd's ConfigurationDirectory=svr: /etc/svr/mods, the admin's,
// apart from the code an upgrade replaces); a config outside svr's own directory that leaves them
// to the defaults next to svr.js is told so at start.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { startServer, request, makeTempDir } = require('../support/helpers');
const { INSTALL_DIR, defaultModsDirectory } = require('../../lib/product');

const NOTE = /the defaults next to svr\.js, not next to /;

test('defaultModsDirectory: mods/ in $CONFIGURATION_DIRECTORY (its first entry), else next to svr.js', () => {
  assert.equal(defaultModsDirectory({ CONFIGURATION_DIRECTORY: '/etc/svr' }), '/etc/svr/mods');
  assert.equal(defaultModsDirectory({ CONFIGURATION_DIRECTORY: '/etc/svr:/etc/other' }), '/etc/svr/mods');
  assert.equal(defaultModsDirectory({}), path.join(INSTALL_DIR, 'mods'));
});

test('a config in its own folder with the default directories: the start says which are used, and where', async (t) => {
  const server = await startServer({ files: { 'index.html': 'x' } });
  t.after(() => server.stop());
  const line = server.stderr().find((l) => NOTE.test(l));
  assert.ok(line, server.stderr().join('\n'));
  assert.ok(line.includes(`mods from ${path.join(INSTALL_DIR, 'mods')}`), line);
  assert.ok(line.includes(`state in ${path.join(INSTALL_DIR, 'state')}`), line);
  assert.ok(line.includes(server.configFile), line);
  assert.match(line, /set "modsDirectory" and "stateDirectory"/);
});

test('with modsDirectory and stateDirectory set, nothing is said', async (t) => {
  const server = await startServer({ config: { modsDirectory: 'mods', stateDirectory: 'state' }, files: { 'index.html': 'x', '../mods/README.md': 'none yet' } });
  t.after(() => server.stop());
  assert.ok(!server.stderr().some((l) => NOTE.test(l)), server.stderr().join('\n'));
});

test('$CONFIGURATION_DIRECTORY (as under svr.service): mods are loaded from its mods/ folder', async (t) => {
  const etc = makeTempDir();
  t.after(() => fs.rmSync(etc, { recursive: true, force: true }));
  fs.mkdirSync(path.join(etc, 'mods'));
  fs.writeFileSync(path.join(etc, 'mods', '10-admin.js'),
    "module.exports = (req, res, log, config, next) => { res.setHeader('X-Admin-Mod', 'yes'); next(); };\n");
  const server = await startServer({ files: { 'index.html': 'x' }, env: { CONFIGURATION_DIRECTORY: etc } });
  t.after(() => server.stop());
  assert.equal((await request(`${server.url}/`)).headers['x-admin-mod'], 'yes');
  const line = server.stderr().find((l) => NOTE.test(l));
  assert.ok(line && !line.includes('mods from'), `only the state directory is named: ${line}`);
});
