'use strict';
// In-process harness for stage behaviour: the worker's pipeline behind http.createServer on a
// free loopback port, with a temporary config file and web root. About 50x cheaper than starting
// svr.js; use test/helpers.js startServer where the process is the point (CLI, supervision,
// crash recycling, TLS sessions, the access log).
//
//   const site = await startPipeline({ config, files, mods })
//   site.url, site.root, site.dir, site.logs (every log line), site.stop()
// files: { 'path/under/web': content } ('../x' writes beside the web root);
// mods: { 'name.js': source } written into a mods directory the config points at.

const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { makeTempDir, writeFiles } = require('../helpers');
const { checkConfig } = require('../../lib/config/load');
const { createPipeline } = require('../../lib/pipeline');

function collectingLog(lines) {
  const add = (level) => (message) => lines.push(`${level} ${message}`);
  return { info: add('info'), warn: add('warn'), error: add('error') };
}

// The config as a worker gets it: schema defaults applied, paths resolved; throws on errors.
function completeConfig(dir, config) {
  const configFile = path.join(dir, 'svr-config.json');
  const raw = { wwwroot: 'web', ...config };
  fs.writeFileSync(configFile, JSON.stringify(raw, null, 2));
  const { config: complete, errors } = checkConfig(JSON.parse(JSON.stringify(raw)), { file: configFile });
  if (errors.length) throw new Error(errors.join('\n'));
  return { config: complete, configFile };
}

async function startPipeline({ config = {}, files = {}, mods = null, disableMods = false } = {}) {
  const dir = makeTempDir('svr-pipeline-');
  const root = path.join(dir, 'web');
  fs.mkdirSync(root);
  writeFiles(root, files);
  if (mods) {
    writeFiles(path.join(dir, 'mods'), mods);
    config = { modsDirectory: 'mods', ...config };
  }
  const logs = [];
  let server;
  try {
    const { config: complete, configFile } = completeConfig(dir, config);
    const pipeline = createPipeline(complete, { log: collectingLog(logs), configFile, disableMods });
    server = http.createServer(pipeline.handle);
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${server.address().port}`;
    return {
      url, root, dir, logs, pipeline, config: complete,
      stop: () => new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          fs.rmSync(dir, { recursive: true, force: true });
          resolve();
        });
      }),
    };
  } catch (error) {
    if (server) server.close();
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

module.exports = { startPipeline, completeConfig };
