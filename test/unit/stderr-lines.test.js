'use strict';
// A script's stderr as log lines, bounded per request.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const { StderrLines } = require('../../lib/pipeline/gateway/stderr-lines');

test('whole lines as they complete, CRLF and empty lines dropped, the rest at the end', () => {
  const out = [];
  const lines = new StderrLines((line) => out.push(line), 1000);
  lines.push(Buffer.from('one\r\ntw'));
  assert.deepEqual(out, ['one']);
  lines.push(Buffer.from('o\n\nthree'));
  assert.deepEqual(out, ['one', 'two']);
  lines.flush();
  assert.deepEqual(out, ['one', 'two', 'three']);
});

test('at most maxBytes per request reach the log', () => {
  const out = [];
  const lines = new StderrLines((line) => out.push(line), 10);
  lines.push(Buffer.from('123456789\n')); // 10 bytes: the limit
  lines.push(Buffer.from('dropped\n'));
  lines.flush();
  assert.deepEqual(out, ['123456789']);
});

test('control characters but TAB are escaped: no CR, ANSI escape or C1 reaches the log', () => {
  const out = [];
  const lines = new StderrLines((line) => out.push(line), 1000);
  lines.push(Buffer.from('a\rb\x1b[31mred\tx\x00\x7f\u009b\u2028App\\Http\r\n'));
  lines.push(Buffer.from('last\x1b'));
  lines.flush();
  assert.deepEqual(out, ['a\\x0db\\x1b[31mred\tx\\x00\\x7f\\x9b\\u2028App\\Http', 'last\\x1b']);
});

// FastCGI cuts stderr into records, and a pipe into reads, wherever the script's bytes fall.
test('a character split across two pushes arrives whole, at every split point', () => {
  const text = 'é € 😀 end';
  const bytes = Buffer.from(`${text}\n`);
  for (let at = 1; at < bytes.length; at++) {
    const out = [];
    const lines = new StderrLines((line) => out.push(line), 1000);
    lines.push(bytes.subarray(0, at));
    lines.push(bytes.subarray(at));
    lines.flush();
    assert.deepEqual(out, [text], `split after byte ${at}`);
  }
});

test('bytes that are not UTF-8, or a character the script left unfinished, are U+FFFD', () => {
  const out = [];
  const lines = new StderrLines((line) => out.push(line), 1000);
  lines.push(Buffer.from([0x61, 0xff, 0x62, 0xe2, 0x82]));
  lines.push(Buffer.from([0x0a, 0x63, 0xc3]));
  lines.flush();
  assert.deepEqual(out, ['a\ufffdb\ufffd', 'c\ufffd']);
});

test('a push that crosses maxBytes is cut at it', () => {
  const out = [];
  const lines = new StderrLines((line) => out.push(line), 10);
  lines.push(Buffer.from('abcdefgh\n')); // 9 bytes
  lines.push(Buffer.from('0123456789\n')); // 1 byte left
  lines.flush();
  assert.deepEqual(out, ['abcdefgh', '0']);
});
