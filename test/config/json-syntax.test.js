'use strict';
// A JSON syntax error in the config names what JSON lacks when that is the likely cause (comments,
// trailing commas, single quotes) and shows the line with a caret under the place.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { loadConfig } = require('../../lib/config/load');
const { makeTempDir, runSvr } = require('../support/helpers');

function write(text) {
  const file = path.join(makeTempDir(), 'svr-config.json');
  fs.writeFileSync(file, text);
  return file;
}

const cases = [
  ['a // comment', '{\n  "port": 80, // the port\n  "wwwroot": "x"\n}\n', 2, 15, /; JSON has no comments/, '    2 |   "port": 80, // the port\n      |               ^'],
  ['a /* comment */', '{\n  "port": 80 /* x */\n}\n', 2, 14, /; JSON has no comments/, '    2 |   "port": 80 /* x */\n      |              ^'],
  ['a trailing comma in an object', '{\n  "port": 80,\n}\n', 3, 1, /; JSON allows no trailing comma \(remove the "," before this "}"\)/, '    3 | }\n      | ^'],
  ['a trailing comma in an array', '{ "errorPages": [1, 2, ] }', 1, 24, /; JSON allows no trailing comma \(remove the "," before this "]"\)/, '    1 | { "errorPages": [1, 2, ] }\n      |                        ^'],
  ['single quotes', "{\n\t'port': 80 }", 2, 2, /; JSON strings and key names take double quotes/, "    2 | \t'port': 80 }\n      | \t^"],
];

for (const [what, text, line, column, hint, shown] of cases) {
  test(`${what}: the hint and the line`, () => {
    const file = write(text);
    const { errors } = loadConfig(file);
    assert.equal(errors.length, 1);
    const [first, ...rest] = errors[0].split('\n');
    assert.ok(first.startsWith(`${file}:${line}:${column}: JSON syntax error: `), first);
    assert.match(first, hint);
    assert.equal(rest.join('\n'), shown);
  });
}

test('a syntax error that is none of these gets the line, and no hint', () => {
  const { errors } = loadConfig(write('{\n  "port": 80,\n  "wwwroot": }\n'));
  assert.doesNotMatch(errors[0], /JSON has no|JSON allows no|double quotes/);
  assert.match(errors[0], /\n {4}3 | {3}"wwwroot": }\n {4} \| {14}\^$/);
});

test('a long (minified) line is shown around the place, not whole', () => {
  const text = `{${Array.from({ length: 40 }, (_, i) => `"k${i}": ${i}`).join(', ')}, }`;
  const { errors } = loadConfig(write(text));
  const shown = errors[0].split('\n')[1];
  assert.ok(shown.length < 120, shown);
  assert.match(shown, /…"k\d+": \d+.*, }$/);
  const caret = errors[0].split('\n')[2];
  assert.equal(caret.indexOf('^'), shown.lastIndexOf('}'));
});

test('svr --check prints the hint and the line', async () => {
  const file = write('{\n  "wwwroot": "web", // served\n}\n');
  const { code, stderr } = await runSvr(['--check', '--config', file]);
  assert.equal(code, 1);
  const lines = stderr.split('\n');
  assert.equal(lines.length, 4, stderr);
  assert.ok(lines[0].startsWith(`${file}:2:21: JSON syntax error: `), lines[0]); // then V8's words
  assert.ok(lines[0].endsWith('; JSON has no comments (remove it, or move the note into a key of its own)'), lines[0]);
  assert.equal(lines.slice(1).join('\n'), `    2 |   "wwwroot": "web", // served\n      |                     ^\n${file}: 1 error`);
});
