#!/usr/bin/env node
'use strict';
// npm run test:node-matrix: the suite (or the files and folders given, as for npm test) under each
// Node major svr supports, one after the other. A major other than the running Node's is installed
// once from the npm registry's `node` package (the official binaries) into
// node_modules/.cache/node-matrix/<major>/ and reused; an exact version may be given per major.
//
//   npm run test:node-matrix                               20, 22 and 24, the whole suite each
//   npm run test:node-matrix -- test/net                   those folders and files only
//   SVR_NODE_MATRIX=22,24 npm run test:node-matrix         only these majors
//   SVR_NODE_MATRIX=24.11.1 npm run test:node-matrix       that version
//
// Exits 1 when any run failed; prints one line per version at the end.

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const REPO = path.join(__dirname, '..');
const CACHE = path.join(REPO, 'node_modules', '.cache', 'node-matrix');
const DEFAULT_VERSIONS = ['20', '22', '24'];

function wantedVersions() {
  const list = process.env.SVR_NODE_MATRIX ? process.env.SVR_NODE_MATRIX.split(',') : DEFAULT_VERSIONS;
  return list.map((v) => v.trim()).filter(Boolean);
}

// The running Node when it is the version asked for; otherwise the npm package's binary.
function nodeBinary(version) {
  const running = process.versions.node;
  if (running === version || running.split('.')[0] === version) return process.execPath;
  const prefix = path.join(CACHE, version);
  const binary = path.join(prefix, 'node_modules', 'node', 'bin', 'node');
  if (!fs.existsSync(binary)) {
    process.stderr.write(`node-matrix: installing node@${version} into ${prefix}\n`);
    const npm = spawnSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefix', prefix, `node@${version}`], { stdio: 'inherit' });
    if (npm.status !== 0 || !fs.existsSync(binary)) throw new Error(`node-matrix: could not install node@${version} from the npm registry`);
  }
  return binary;
}

function runSuite(binary, args) {
  // PATH first: a test that runs `node` by name gets the same version.
  const env = { ...process.env, PATH: `${path.dirname(binary)}${path.delimiter}${process.env.PATH}` };
  const run = spawnSync(binary, [path.join(REPO, 'scripts', 'test.js'), ...args], { stdio: 'inherit', env, cwd: REPO });
  return run.status === 0;
}

function main() {
  const args = process.argv.slice(2);
  const outcomes = [];
  for (const version of wantedVersions()) {
    let binary;
    try {
      binary = nodeBinary(version);
    } catch (error) {
      outcomes.push({ version, line: error.message, ok: false });
      continue;
    }
    const exact = spawnSync(binary, ['--version'], { encoding: 'utf8' }).stdout.trim();
    process.stderr.write(`\nnode-matrix: ${exact} (${binary})\n`);
    const ok = runSuite(binary, args);
    outcomes.push({ version, line: `${exact}: ${ok ? 'passed' : 'FAILED'}`, ok });
  }
  process.stderr.write(`\nnode-matrix:\n${outcomes.map((o) => `  ${o.line}`).join('\n')}\n`);
  process.exitCode = outcomes.every((o) => o.ok) ? 0 : 1;
}

main();
