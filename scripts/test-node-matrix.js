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
const path = require('node:path');
const { nodeBinary, exactVersion } = require('./node-versions');

const REPO = path.join(__dirname, '..');
const DEFAULT_VERSIONS = ['20', '22', '24'];

function wantedVersions() {
  const list = process.env.SVR_NODE_MATRIX ? process.env.SVR_NODE_MATRIX.split(',') : DEFAULT_VERSIONS;
  return list.map((v) => v.trim()).filter(Boolean);
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
      binary = nodeBinary(version, (line) => process.stderr.write(`node-matrix: ${line}\n`));
    } catch (error) {
      outcomes.push({ version, line: error.message, ok: false });
      continue;
    }
    const exact = `v${exactVersion(binary)}`;
    process.stderr.write(`\nnode-matrix: ${exact} (${binary})\n`);
    const ok = runSuite(binary, args);
    outcomes.push({ version, line: `${exact}: ${ok ? 'passed' : 'FAILED'}`, ok });
  }
  process.stderr.write(`\nnode-matrix:\n${outcomes.map((o) => `  ${o.line}`).join('\n')}\n`);
  process.exitCode = outcomes.every((o) => o.ok) ? 0 : 1;
}

main();
