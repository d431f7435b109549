'use strict';
// Which commit of svr a run measured: `git rev-parse --short HEAD` of the checkout that holds the
// svr.js under test, and whether its tracked files had changes not committed (the files the bench
// itself writes excepted).
const { spawnSync } = require('child_process');

const BENCH_OUTPUTS = ['docs/performance-latest.md', 'docs/performance.svg'];

function git(dir, args) {
  const result = spawnSync('git', ['-C', dir, ...args], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trimEnd() : null; // porcelain lines start with a space
}

// Lines of `git status --porcelain` -> whether any change counts (the bench's own outputs do not).
function isDirty(porcelain) {
  return porcelain
    .split('\n')
    .filter(Boolean)
    .some((line) => !BENCH_OUTPUTS.includes(line.slice(3).trim()));
}

function measuredCommit(dir) {
  const hash = git(dir, ['rev-parse', '--short', 'HEAD']);
  if (hash === null) return { hash: null, dirty: null, label: 'unknown (not a git checkout)' };
  const porcelain = git(dir, ['status', '--porcelain', '--untracked-files=no']) || '';
  const dirty = isDirty(porcelain);
  return { hash, dirty, label: `${hash}${dirty ? ' (dirty: uncommitted changes)' : ''}` };
}

module.exports = { measuredCommit, isDirty };
