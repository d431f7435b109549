'use strict';
// Node binaries by version for the test matrix and the bench: the running Node when it is the
// version asked for, otherwise the npm registry's `node` package (the official binaries),
// installed once into node_modules/.cache/node-matrix/<version>/ and reused.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const CACHE = path.join(__dirname, '..', 'node_modules', '.cache', 'node-matrix');

function isRunning(version) {
  const running = process.versions.node;
  return running === version || running.split('.')[0] === version;
}

function nodeBinary(version, log = (line) => process.stderr.write(`${line}\n`)) {
  if (isRunning(version)) return process.execPath;
  if (!/^\d+(\.\d+){0,2}$/.test(version)) throw new Error(`a Node version is a major (24) or an exact version (24.11.1): ${version}`);
  const prefix = path.join(CACHE, version);
  const binary = path.join(prefix, 'node_modules', 'node', 'bin', 'node');
  if (!fs.existsSync(binary)) {
    log(`installing node@${version} into ${prefix}`);
    const npm = spawnSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', prefix, `node@${version}`], { stdio: ['ignore', 'inherit', 'inherit'] });
    if (npm.status !== 0 || !fs.existsSync(binary)) throw new Error(`could not install node@${version} from the npm registry`);
  }
  return binary;
}

function exactVersion(binary) {
  return spawnSync(binary, ['--version'], { encoding: 'utf8' }).stdout.trim().replace(/^v/, '');
}

module.exports = { nodeBinary, exactVersion, CACHE };
