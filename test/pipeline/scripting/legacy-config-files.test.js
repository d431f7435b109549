'use strict';
// Legacy (.tar.gz) mods read their settings file (reverse-proxy-mod: reverse-proxy-config.json)
// from __dirname + "/../../../", which under svr is the state directory. A moved site has the file
// next to its old SVR.JS install: svr copies it from there before the mods load, keeps a file the
// state directory already has, and warns when a mod created an empty one.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const tar = require('tar');
const { getFreePort, makeTempDir, writeFiles, spawnSvr, runSvr, request } = require('../../support/helpers');

// What reverse-proxy-mod does at load, and a callback that shows what it read.
const PROBE_MOD = `
var fs = require("fs");
var settings = {};
if (fs.existsSync(__dirname + "/../../../probe-config.json")) settings = JSON.parse(fs.readFileSync(__dirname + "/../../../probe-config.json").toString());
else fs.writeFileSync(__dirname + "/../../../probe-config.json", "{}");
function Mod() {}
Mod.prototype.callback = function (req, res, serverconsole, responseEnd, href, ext, uobject, search, defaultpage, users, page404, head, foot, fd, elseCallback) {
  return function () {
    if (href !== "/probe") return elseCallback();
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(settings));
  };
};
module.exports = Mod;
`;

function packProbe(into) {
  const staging = makeTempDir('svr-tar-');
  writeFiles(staging, { 'index.js': PROBE_MOD, 'mod.info': JSON.stringify({ name: 'probe-mod', version: '1.0.0' }) });
  fs.mkdirSync(into, { recursive: true });
  tar.c({ gzip: true, file: path.join(into, '10-probe.tar.gz'), cwd: staging, sync: true, portable: true }, ['index.js', 'mod.info']);
}

// A site: web/, mods/ with the probe, state/, and the config at configDir/config.json.
async function layout({ svrjsConfig, oldInstallFiles = {}, stateFiles = {} }) {
  const dir = makeTempDir();
  writeFiles(dir, { 'web/index.html': 'home' });
  packProbe(path.join(dir, 'mods'));
  fs.mkdirSync(path.join(dir, 'state'));
  writeFiles(path.join(dir, 'state'), stateFiles);
  const configDir = path.join(dir, 'svrjs');
  fs.mkdirSync(configDir);
  writeFiles(configDir, oldInstallFiles);
  const port = await getFreePort();
  const config = {
    ...(svrjsConfig ? { timestamp: 1700000000000 } : {}),
    port, wwwroot: '../web', workers: 1, modsDirectory: '../mods', stateDirectory: '../state',
  };
  const configFile = path.join(configDir, 'config.json');
  fs.writeFileSync(configFile, JSON.stringify(config));
  return { dir, port, configFile, state: path.join(dir, 'state'), configDir };
}

async function start(site) {
  const child = spawnSvr(['--config', site.configFile]);
  const failed = child.exited.then(({ code }) => { throw new Error(`svr exited with ${code}:\n${child.err.lines.join('\n')}`); });
  failed.catch(() => {});
  await Promise.race([child.err.waitFor(/listening on /), failed]);
  return child;
}

async function stop(child) {
  child.proc.kill('SIGTERM');
  assert.equal((await child.exited).code, 0);
}

test('an SVR.JS config: the settings file next to it is copied into the state directory and read', async () => {
  const site = await layout({ svrjsConfig: true, oldInstallFiles: { 'probe-config.json': '{"greeting":"from the old install"}' } });
  const child = await start(site);
  try {
    const answer = await request(`http://127.0.0.1:${site.port}/probe`);
    assert.deepEqual(JSON.parse(answer.text), { greeting: 'from the old install' });
    assert.equal(fs.readFileSync(path.join(site.state, 'probe-config.json'), 'utf8'), '{"greeting":"from the old install"}');
    const line = child.err.lines.find((l) => l.includes('legacy mods: probe-config.json copied from'));
    assert.ok(line, child.err.lines.join('\n'));
    assert.ok(line.includes(`copied from ${fs.realpathSync(site.configDir)} (where SVR.JS kept it) to ${site.state}`), line);
    assert.ok(!child.err.lines.some((l) => /with no settings in it/.test(l)), child.err.lines.join('\n'));
  } finally {
    await stop(child);
  }
});

test('svr --check copies nothing; a start copies with the file\'s own permission bits', async () => {
  const site = await layout({ svrjsConfig: true, oldInstallFiles: { 'probe-config.json': '{"secret":"s"}' } });
  fs.chmodSync(path.join(site.configDir, 'probe-config.json'), 0o600);
  const check = await runSvr(['--check', '--config', site.configFile]);
  assert.equal(check.code, 0, check.stderr);
  const copy = path.join(site.state, 'probe-config.json');
  assert.notEqual(fs.existsSync(copy) && fs.readFileSync(copy, 'utf8'), '{"secret":"s"}', 'not copied by --check');
  const child = await start(site);
  try {
    assert.deepEqual(JSON.parse((await request(`http://127.0.0.1:${site.port}/probe`)).text), { secret: 's' });
    assert.equal(fs.statSync(copy).mode & 0o777, 0o600);
  } finally {
    await stop(child);
  }
});

test('the {} a mod wrote earlier is replaced by the SVR.JS file; a real one in the state directory is kept', async () => {
  const placeholder = await layout({ svrjsConfig: true, oldInstallFiles: { 'probe-config.json': '{"greeting":"old"}' }, stateFiles: { 'probe-config.json': '{}' } });
  let child = await start(placeholder);
  try {
    assert.deepEqual(JSON.parse((await request(`http://127.0.0.1:${placeholder.port}/probe`)).text), { greeting: 'old' });
  } finally {
    await stop(child);
  }
  const kept = await layout({ svrjsConfig: true, oldInstallFiles: { 'probe-config.json': '{"greeting":"old"}' }, stateFiles: { 'probe-config.json': '{"greeting":"edited here"}' } });
  child = await start(kept);
  try {
    assert.deepEqual(JSON.parse((await request(`http://127.0.0.1:${kept.port}/probe`)).text), { greeting: 'edited here' });
    assert.ok(child.err.lines.some((l) => l.includes(`legacy mods: ${path.join(kept.state, 'probe-config.json')} is used; `) && l.includes('differs and is not read')), child.err.lines.join('\n'));
  } finally {
    await stop(child);
  }
});

test('a mod that finds no settings and creates an empty file is named in a warning', async () => {
  const site = await layout({ svrjsConfig: false });
  const child = await start(site);
  try {
    assert.deepEqual(JSON.parse((await request(`http://127.0.0.1:${site.port}/probe`)).text), {});
    const created = path.join(site.state, 'probe-config.json');
    assert.equal(fs.readFileSync(created, 'utf8'), '{}');
    const warning = child.err.lines.find((l) => / warn primary: .*10-probe\.tar\.gz: the mod created /.test(l));
    assert.ok(warning, child.err.lines.join('\n'));
    assert.ok(warning.includes(`created ${created} with no settings in it, so it runs unconfigured`), warning);
  } finally {
    await stop(child);
  }
});
