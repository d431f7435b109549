'use strict';
// .ci/run is what CI runs on a clean checkout: exactly the test command README.md opens with, so
// that a green CI says the README's command works.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');

// The commands of README's first ```sh block, without their comments.
function readmeCommands() {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const block = /```sh\n([\s\S]*?)```/.exec(readme)[1];
  return block.split('\n').map((line) => line.replace(/#.*$/, '').trim()).filter(Boolean);
}

test('README opens with two commands: start the server, run the tests', () => {
  assert.deepEqual(readmeCommands(), ['npm install && npm start', 'npm ci && npm test']);
});

test('.ci/run runs exactly README\'s test command and nothing else', () => {
  const script = fs.readFileSync(path.join(ROOT, '.ci', 'run'), 'utf8');
  const commands = script.split('\n').map((line) => line.trim()).filter((line) => line && !line.startsWith('#'));
  assert.deepEqual(commands, ['set -euo pipefail', 'cd "$(dirname "$0")/.."', readmeCommands()[1]]);
});
