'use strict';
// Every comment, description and doc stands on its own: none cites a document a reader of the
// repository cannot open (a security review's numbered findings, a tracker's issue numbers).
// What a piece of code defends against is said next to it; the history is docs/security.md's.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const ROOT = path.join(__dirname, '..', '..');
const OUTSIDE_REFERENCE = new RegExp([
  'attack ' + 'report', // split so that this file does not match itself
  '\\bfindings? ' + '\\d+',
  '\\bissues? ' + '#?\\d+',
  '\\(issue' + ' ',
].join('|'), 'i');
const TEXT = /\.(js|json|md|sh|txt|service|html|css)$|^[^.]+$/;

test('no file cites a report, a finding or an issue number', () => {
  const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' })
    .split('\n').filter((file) => file && TEXT.test(path.basename(file)) && fs.existsSync(path.join(ROOT, file)));
  assert.ok(files.length > 100, `${files.length} files`);
  const offenders = [];
  for (const file of files) {
    const lines = fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n');
    lines.forEach((line, index) => {
      if (OUTSIDE_REFERENCE.test(line)) offenders.push(`${file}:${index + 1}: ${line.trim().slice(0, 120)}`);
    });
  }
  assert.deepEqual(offenders, []);
});
