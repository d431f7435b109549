'use strict';
// The module rules of docs/architecture.md, checked against every require under lib/.

const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { builtinModules } = require('node:module');

const LIB = path.join(__dirname, '..', '..', 'lib');
const PIPELINE = path.join(LIB, 'pipeline');
// Files of lib/pipeline that are not stages: the list, its runner, the per-config facts, and the
// path policy (and its once-per-turn file system answers), the upstream seam and the response cache that several stages share.
const PIPELINE_FRAME = new Set(['index.js', 'runner.js', 'site.js', 'credentials.js', 'web-root.js', 'path-policy.js', 'stat-per-turn.js', 'upstream', 'cache']);
// The one place a process may reach into a stage: the mods' config keys are read before any worker
// exists (so --check and a start refuse a config a mod rejects), in a short-lived child process.
const MOD_KEYS = path.join(PIPELINE, 'scripting', 'mod-keys.js');

function jsFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const full = path.join(dir, d.name);
    if (d.isDirectory()) return jsFiles(full);
    return d.name.endsWith('.js') ? [full] : [];
  });
}

function resolveLocal(from, spec) {
  const base = path.resolve(path.dirname(from), spec);
  for (const candidate of [base, `${base}.js`, path.join(base, 'index.js'), `${base}.json`]) {
    if (fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return candidate;
  }
  throw new Error(`${path.relative(LIB, from)}: cannot resolve ${spec}`);
}

// Every require in lib/: { from, spec, target (absolute file or null for a package/built-in) }.
function requiresIn(file) {
  const text = fs.readFileSync(file, 'utf8');
  return [...text.matchAll(/require\(\s*['"]([^'"]+)['"]\s*\)/g)].map(([, spec]) => ({
    from: file,
    spec,
    target: spec.startsWith('.') ? resolveLocal(file, spec) : null,
  }));
}

// 'http', 'config', 'process', 'net', 'pipeline', or 'top' for lib/*.js, 'outside' for the rest.
function part(file) {
  const rel = path.relative(LIB, file);
  if (rel.startsWith('..')) return 'outside';
  const first = rel.split(path.sep)[0];
  return first.endsWith('.js') ? 'top' : first;
}

// For a file under lib/pipeline: its stage ('sanitize.js', 'static', ...) or null for the frame.
function stageOf(file) {
  const rel = path.relative(PIPELINE, file);
  if (rel.startsWith('..')) return null;
  const first = rel.split(path.sep)[0];
  return PIPELINE_FRAME.has(first) ? null : first;
}

const edges = jsFiles(LIB).flatMap(requiresIn);
const show = (e) => `${path.relative(LIB, e.from)} requires ${e.spec}`;
const broken = (predicate) => edges.filter(predicate).map(show);

test('every local require resolves to a file', () => {
  assert.ok(edges.length > 50, 'the scan found the requires');
});

test('lib/http requires only Node built-ins', () => {
  const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
  assert.deepEqual(broken((e) => part(e.from) === 'http' && !builtins.has(e.spec)), []);
});

test('a stage never requires another stage, process/ or net/', () => {
  assert.deepEqual(broken((e) => {
    const stage = stageOf(e.from);
    if (stage === null || e.target === null) return false;
    if (['process', 'net'].includes(part(e.target))) return true;
    const targetStage = stageOf(e.target);
    return targetStage !== null && targetStage !== stage;
  }), []);
});

test('only pipeline/index.js requires the stages', () => {
  assert.deepEqual(broken((e) => e.target !== null && stageOf(e.target) !== null && stageOf(e.from) === null &&
    e.from !== path.join(PIPELINE, 'index.js') && !(part(e.from) === 'process' && e.target === MOD_KEYS)), []);
});

test('net/ never requires pipeline/ or process/', () => {
  assert.deepEqual(broken((e) => part(e.from) === 'net' && e.target !== null && ['pipeline', 'process'].includes(part(e.target))), []);
});

test('config/ requires neither net/, pipeline/ nor process/', () => {
  assert.deepEqual(broken((e) => part(e.from) === 'config' && e.target !== null && ['net', 'pipeline', 'process'].includes(part(e.target))), []);
});

test('nothing below process/ requires process/', () => {
  assert.deepEqual(broken((e) => part(e.from) !== 'process' && e.target !== null && part(e.target) === 'process'), []);
});

test('acme/ requires only itself, product.js and package.json (besides built-ins)', () => {
  const allowed = new Set([path.join(LIB, 'product.js'), path.join(LIB, '..', 'package.json')]);
  assert.deepEqual(broken((e) => part(e.from) === 'acme' && e.target !== null && part(e.target) !== 'acme' && !allowed.has(e.target)), []);
  assert.deepEqual(broken((e) => part(e.from) === 'acme' && e.target === null && !builtinModules.includes(e.spec.replace(/^node:/, ''))), []);
});
