'use strict';
// A request the script never answers was held for ever. With
// scriptTimeout it gets a 504 (the error page) and the log names the script or mod. The timer and
// its log line are the scripting stage's: the pipeline runs in-process.

const test = require('node:test');
const assert = require('node:assert/strict');
const { request } = require('../../support/helpers');
const { startPipeline } = require('../../support/pipeline');

const SCRIPT = String.raw`
if (href === '/never') { disableEndElseCallbackExecute = true; return; }
if (href === '/slow-ok') { disableEndElseCallbackExecute = true; setTimeout(function () { responseEnd('late but fine'); }, 200); return; }
`;

const MOD = `
module.exports = function (req, res, logFacilities, config, next) {
  if (req.parsedURL.pathname === '/mod-never') return; // neither answers nor calls next()
  next();
};
module.exports.modInfo = { name: 'forgetful-mod', version: '1.0.0' };
`;

test('a request a script never answers gets 504 after scriptTimeout, logged with the script name', async () => {
  const server = await startPipeline({
    config: { scriptTimeout: 1000, useWebRootServerSideScript: true },
    files: { 'serverSideScript.js': SCRIPT, 'a.txt': 'static\n' },
  });
  try {
    const started = Date.now();
    const res = await request(`${server.url}/never`, { timeout: 8000 });
    const took = Date.now() - started;
    assert.equal(res.status, 504);
    assert.match(res.text, /504 Gateway Timeout/);
    assert.ok(took >= 900 && took < 5000, `answered after ${took} ms`);
    const line = await server.waitForLog(/scriptTimeout/);
    assert.match(line, /serverSideScript\.js/);
    assert.match(line, /GET \/never/);
    // a slower answer within the limit, and static files, are untouched
    assert.equal((await request(`${server.url}/slow-ok`)).text, 'late but fine');
    assert.equal((await request(`${server.url}/a.txt`)).text, 'static\n');
  } finally {
    await server.stop();
  }
});

test('a mod that never answers nor calls next() gets 504, logged with the mod name', async () => {
  const server = await startPipeline({ config: { scriptTimeout: 1000, modsDirectory: 'mods' }, files: { 'a.txt': 'static\n', '../mods/forgetful.js': MOD } });
  try {
    const since = 0;
    const res = await request(`${server.url}/mod-never`, { timeout: 8000 });
    assert.equal(res.status, 504);
    const line = await server.waitForLog(/scriptTimeout/, 'stderr', since);
    assert.match(line, /forgetful-mod/);
    assert.equal((await request(`${server.url}/a.txt`)).text, 'static\n');
  } finally {
    await server.stop();
  }
});

test('scriptTimeout defaults to 60000 and 0 turns it off', async () => {
  const schema = require('../../../config/svr-config.schema.json');
  assert.equal(schema.properties.scriptTimeout.default, 60000);
  const server = await startPipeline({ config: { scriptTimeout: 0, useWebRootServerSideScript: true }, files: { 'serverSideScript.js': SCRIPT } });
  try {
    await assert.rejects(request(`${server.url}/never`, { timeout: 1500 }), /timed out/);
  } finally {
    await server.stop();
  }
});
