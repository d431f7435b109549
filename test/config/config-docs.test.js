'use strict';

// Every config key is described once: in config/svr-config.schema.json, rendered into
// docs/configuration.md by scripts/config-docs.js. These tests keep it that way.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const { render, update, readSchema, anchorOf, DOC_FILE, START, END } = require('../../scripts/config-docs');

const REPO = path.join(__dirname, '..', '..');
const schema = readSchema();
const doc = fs.readFileSync(DOC_FILE, 'utf8');
const STALE = 'docs/configuration.md is out of date with config/svr-config.schema.json: run `node scripts/config-docs.js`';

test('the key reference in docs/configuration.md is the one rendered from the schema', () => {
  assert.ok(doc.includes(START) && doc.includes(END), `docs/configuration.md lacks ${START} / ${END}`);
  const fresh = update(doc, schema);
  if (fresh === doc) return;
  // The first line that differs, so the failure says what changed.
  const have = doc.split('\n');
  const want = fresh.split('\n');
  const i = want.findIndex((line, n) => line !== have[n]);
  assert.fail(`${STALE}\nfirst difference, line ${i + 1}:\n  page:   ${have[i]}\n  schema: ${want[i]}`);
});

test('the rendered reference has one row, with its anchor, for every key of the schema', () => {
  const table = render(schema);
  for (const key of Object.keys(schema.properties)) {
    const rows = table.split('\n').filter((line) => line.startsWith(`| <a id="${anchorOf([key])}"></a>`));
    assert.equal(rows.length, 1, `${key}: expected one row in the reference, found ${rows.length}`);
    assert.ok(schema.properties[key].description, `${key}: the schema gives no description to render`);
  }
});

test('a changed description shows up as an out-of-date page', () => {
  const changed = structuredClone(schema);
  changed.properties.port.description = 'A description the page does not have yet.';
  assert.notEqual(update(doc, changed), doc);
  assert.ok(render(changed).includes('A description the page does not have yet.'));
});

// The markdown files users read: README.md and docs/*.md.
function userDocs() {
  const files = [path.join(REPO, 'README.md')];
  const docsDir = path.join(REPO, 'docs');
  for (const name of fs.readdirSync(docsDir).sort()) {
    if (name.endsWith('.md')) files.push(path.join(docsDir, name));
  }
  return files;
}

// Lines of `text` outside the generated block (which only docs/configuration.md has).
function handWrittenLines(file, text) {
  const lines = text.split('\n');
  if (file !== DOC_FILE) return lines.map((line, i) => [i + 1, line]);
  const start = lines.findIndex((line) => line.includes(START));
  const end = lines.findIndex((line) => line.includes(END));
  return lines.map((line, i) => [i + 1, line]).filter(([n]) => n - 1 < start || n - 1 > end);
}

// A table row whose first cell is one config key (`| `port` | ...`) restates the reference; so does
// a table headed "Key".
function keyTableRows(file) {
  const keys = new Set(Object.keys(schema.properties));
  const found = [];
  for (const [n, line] of handWrittenLines(file, fs.readFileSync(file, 'utf8'))) {
    if (!line.trimStart().startsWith('|')) continue;
    const first = line.trim().slice(1).split('|')[0].replace(/<a [^>]*><\/a>/g, '').trim();
    const single = /^`([^`]+)`$/.exec(first);
    if ((single && keys.has(single[1])) || /^keys?$/i.test(first)) {
      found.push(`${path.relative(REPO, file)}:${n}: ${line.trim().slice(0, 80)}`);
    }
  }
  return found;
}

test('no README or docs page restates a key table (link to docs/configuration.md#key-NAME instead)', () => {
  const found = userDocs().flatMap(keyTableRows);
  assert.deepEqual(found, [], `key tables outside the generated reference:\n${found.join('\n')}`);
});

test('links to key rows point at rows that exist', () => {
  const anchors = new Set([...render(schema).matchAll(/<a id="([^"]+)"><\/a>/g)].map((m) => m[1]));
  const broken = [];
  for (const file of userDocs()) {
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/configuration\.md#(key-[a-z0-9-]+)/g)) {
      if (!anchors.has(m[1])) broken.push(`${path.relative(REPO, file)}: #${m[1]}`);
    }
    if (file === DOC_FILE) {
      for (const m of text.matchAll(/\]\(#(key-[a-z0-9-]+)\)/g)) {
        if (!anchors.has(m[1])) broken.push(`docs/configuration.md: #${m[1]}`);
      }
    }
  }
  assert.deepEqual(broken, [], `links to key rows that do not exist:\n${broken.join('\n')}`);
});
