'use strict';
// checkPipeline (what `svr check` and the primary run) builds what a worker's createPipeline
// builds and finds the same problems, every one at once, while starting nothing; a worker's
// pipeline starts its background work (the proxy's health checks) only in prepare().

const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { once } = require('node:events');
const { makeTempDir, writeFiles } = require('../support/helpers');
const { loadConfig } = require('../../lib/config/load');
const { createPipeline, checkPipeline } = require('../../lib/pipeline');

// A schema-complete config from `raw` (wwwroot "web" beside it), then `after` applied to it: the
// schema rejects a rewrite regex that does not compile, so one is put in after validation to
// reach the stage's own compiler.
function siteConfig(raw, files = {}, after = {}) {
  const dir = makeTempDir('svr-check-pipeline-');
  writeFiles(dir, { 'web/index.html': 'x', ...files });
  const configFile = path.join(dir, 'svr-config.json');
  fs.writeFileSync(configFile, JSON.stringify({ wwwroot: 'web', ...raw }));
  const { config, errors } = loadConfig(configFile);
  assert.deepStrictEqual(errors, []);
  return { dir, configFile, config: Object.assign(config, after) };
}

test('checkPipeline reports every stage\'s problems at once, the same lines createPipeline throws', (t) => {
  const { dir, configFile, config } = siteConfig(
    { proxy: [{ path: '/api/', upstreams: ['http://127.0.0.1:99999'] }] },
    { 'web/serverSideScript.js': 'var b = ;\n' },
    { rewriteMap: [{ definingRegex: '/(a/', replacements: [] }] },
  );
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const problems = checkPipeline(config, { configFile });
  assert.deepStrictEqual(problems, [
    `${dir}/web/serverSideScript.js: cannot load the server-side script: SyntaxError: Unexpected token ';' (at ${dir}/web/serverSideScript.js:1)`,
    `${configFile}: proxy[0].upstreams[0]: expected an http://, https:// or unix:/absolute/path upstream, found "http://127.0.0.1:99999"`,
    `${configFile}: rewriteMap[0].definingRegex: Invalid regular expression: /(a/: Unterminated group`,
  ]);
  assert.throws(() => createPipeline(config, { configFile }), (error) => error.code === 'ECONFIG' && error.message === problems.join('\n'));
  // --disable-mods: no script is compiled, by the check as by a worker.
  assert.deepStrictEqual(checkPipeline(config, { configFile, disableMods: true }), problems.slice(1));
});

test('a web root that is not a directory: one line naming the key, as a worker refuses it', (t) => {
  const { dir, configFile, config } = siteConfig({});
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  config.wwwroot = path.join(dir, 'web', 'index.html');
  const problems = checkPipeline(config, { configFile });
  assert.equal(problems.length, 1);
  assert.match(problems[0], new RegExp(`^${configFile}: wwwroot: .*index\\.html is not a readable directory \\(ENOTDIR\\)$`));
  assert.throws(() => createPipeline(config, { configFile }), (error) => error.code === 'EBADWWWROOT');
});

test('checkPipeline leaves the environment alone; createPipeline sets environmentVariables', (t) => {
  const name = `SVR_CHECK_PIPELINE_${process.pid}`;
  const { dir, configFile, config } = siteConfig({ environmentVariables: { [name]: 'set' } });
  t.after(() => {
    delete process.env[name];
    fs.rmSync(dir, { recursive: true, force: true });
  });
  assert.deepStrictEqual(checkPipeline(config, { configFile }), []);
  assert.equal(process.env[name], undefined);
  createPipeline(config, { configFile }).close();
  assert.equal(process.env[name], 'set');
});

test('a checked pipeline sends no health check; a worker\'s sends them once prepared', async (t) => {
  const checks = { checked: 0, served: 0 };
  const upstreams = ['checked', 'served'].map((name) => http.createServer((req, res) => {
    checks[name]++;
    res.end('ok');
  }).listen(0, '127.0.0.1'));
  await Promise.all(upstreams.map((server) => once(server, 'listening')));
  const ruleFor = (server) => ({ proxy: [{ path: '/', upstreams: [`http://127.0.0.1:${server.address().port}`], healthCheck: { path: '/health', interval: 60000, timeout: 1000 } }] });
  const checked = siteConfig(ruleFor(upstreams[0]));
  const served = siteConfig(ruleFor(upstreams[1]));
  let pipeline = null;
  t.after(() => {
    if (pipeline) pipeline.close();
    for (const server of upstreams) server.close();
    for (const { dir } of [checked, served]) fs.rmSync(dir, { recursive: true, force: true });
  });
  assert.deepStrictEqual(checkPipeline(checked.config, { configFile: checked.configFile }), []);
  pipeline = createPipeline(served.config, { configFile: served.configFile });
  const firstCheck = once(upstreams[1], 'request');
  await pipeline.prepare();
  await firstCheck;
  assert.deepStrictEqual(checks, { checked: 0, served: 1 });
});
