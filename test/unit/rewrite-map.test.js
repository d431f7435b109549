'use strict';
// lib/pipeline/rewrite.js compileRewriteMap: the rewrite map compiled once, called directly.

const test = require('node:test');
const assert = require('node:assert/strict');
const { compileRewriteMap } = require('../../lib/pipeline/rewrite');

test('an entry compiles to its regexes, host test and flags, with the defaults filled in', () => {
  const { rules, errors } = compileRewriteMap([
    { definingRegex: '/^\\/user\\/(\\w+)$/i', replacements: [{ regex: '/^\\/user\\/(\\w+)$/i', replacement: '/users/$1.txt' }], append: '?x', host: '*.example.org', isNotFile: true },
    { definingRegex: '/^\\/a/', replacements: [{ regex: '/a/g' }] },
  ]);
  assert.deepEqual(errors, []);
  assert.equal(rules.length, 2);
  const [first, second] = rules;
  assert.equal(first.defining.source, '^\\/user\\/(\\w+)$');
  assert.equal(first.defining.flags, 'i');
  assert.equal('/USER/ann'.replace(first.replacements[0].regex, first.replacements[0].replacement), '/users/ann.txt');
  assert.equal(first.append, '?x');
  assert.equal(first.isNotFile, true);
  assert.equal(first.isNotDirectory, false);
  assert.equal(first.host({ headers: { host: 'a.example.org' } }), true);
  assert.equal(first.host({ headers: { host: 'example.com' } }), false);
  assert.equal(second.host, null, 'no host: every host');
  assert.equal(second.replacements[0].replacement, '', 'a missing replacement replaces with nothing');
  assert.equal(second.replacements[0].regex.flags, 'g');
  assert.equal(second.append, '');
  assert.equal(second.allowDoubleSlashes, false);
});

test('no map, or an empty one, compiles to no rules', () => {
  assert.deepEqual(compileRewriteMap(undefined), { rules: [], errors: [] });
  assert.deepEqual(compileRewriteMap([]), { rules: [], errors: [] });
});

test('every bad entry is reported with its key path, the good ones still compile', () => {
  const { rules, errors } = compileRewriteMap([
    null,
    { definingRegex: '/a(/', replacements: [] },
    { definingRegex: '/ok/', replacements: [{ regex: 'nope', replacement: '' }, { regex: '/fine/', replacement: 'x' }] },
  ]);
  assert.equal(errors.length, 3, errors.join('\n'));
  assert.equal(errors[0], 'rewriteMap[0]: expected an object');
  assert.match(errors[1], /^rewriteMap\[1\]\.definingRegex: /);
  assert.match(errors[2], /^rewriteMap\[2\]\.replacements\[0\]\.regex: /);
  assert.equal(rules.length, 1);
  assert.equal(rules[0].replacements.length, 1);
});
