'use strict';
// The path policy's file system answers are kept for one turn of the event loop: callers in the
// same turn share one lstat, the next turn asks again, and failures are never kept.

const { test, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const answers = require('../../lib/pipeline/stat-per-turn');

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
let dir;
let calls;
const real = { lstatSync: fs.lstatSync, statSync: fs.statSync };

beforeEach(async () => {
  await nextTurn(); // answers kept by an earlier test are gone
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svr-stat-turn-'));
  calls = [];
  fs.lstatSync = (p, ...rest) => { calls.push(['lstat', p]); return real.lstatSync(p, ...rest); };
  fs.statSync = (p, ...rest) => { calls.push(['stat', p]); return real.statSync(p, ...rest); };
});

afterEach(() => {
  Object.assign(fs, real);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('callers in one turn share one lstat; the next turn asks again', async () => {
  const file = path.join(dir, 'a.txt');
  fs.writeFileSync(file, 'one');
  const first = answers.lstatSync(file);
  const second = answers.lstatSync(file);
  assert.equal(second, first);
  assert.deepEqual(calls, [['lstat', file]]);
  await nextTurn();
  answers.lstatSync(file);
  assert.equal(calls.length, 2);
});

test('a change made after the check is seen in the next turn', async () => {
  const file = path.join(dir, 'a.txt');
  fs.writeFileSync(file, 'one');
  assert.equal(answers.lstatSync(file).size, 3);
  fs.writeFileSync(file, 'three');
  assert.equal(answers.lstatSync(file).size, 3, 'the same turn keeps its answer');
  await nextTurn();
  assert.equal(answers.lstatSync(file).size, 5);
});

test('answers kept while the loop handles input are gone before the next timer runs', async () => {
  const file = path.join(dir, 'a.txt');
  fs.writeFileSync(file, 'one');
  // fs.readFile's callback runs where requests are handled (the loop's poll for input); the check
  // phase right after it drops the answer, before the next turn's timers.
  await new Promise((resolve) => fs.readFile(file, () => {
    answers.lstatSync(file);
    setTimeout(resolve, 0);
  }));
  answers.lstatSync(file);
  assert.equal(calls.length, 2);
});

test('a failure is not kept: each caller gets its own error, and a file that appears is found', () => {
  const file = path.join(dir, 'late.txt');
  assert.throws(() => answers.lstatSync(file), { code: 'ENOENT' });
  assert.throws(() => answers.lstatSync(file), { code: 'ENOENT' });
  fs.writeFileSync(file, 'here');
  assert.equal(answers.lstatSync(file).size, 4);
  assert.equal(calls.length, 3);
});

test('lstat, stat and realpath are kept apart', () => {
  const file = path.join(dir, 'a.txt');
  const link = path.join(dir, 'link');
  fs.writeFileSync(file, 'one');
  fs.symlinkSync(file, link);
  assert.equal(answers.lstatSync(link).isSymbolicLink(), true);
  assert.equal(answers.statSync(link).isFile(), true);
  assert.equal(answers.realpathSync(link), fs.realpathSync.native(file));
  assert.equal(answers.realpathSync(file), fs.realpathSync.native(file));
  assert.deepEqual(calls, [['lstat', link], ['stat', link]]);
});
