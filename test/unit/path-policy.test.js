'use strict';
// lib/pipeline/path-policy.js alone, on a real directory: what a URL path may name below a web
// root, for the static stage and any gateway stage that runs files from the root.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { makeTempDir, writeFiles } = require('../support/helpers');
const { pathPolicyFor, errorStatus, INDEX_FILES } = require('../../lib/pipeline/path-policy');

function webRoot(t, files) {
  const dir = fs.realpathSync(makeTempDir('svr-path-policy-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const root = path.join(dir, 'web');
  fs.mkdirSync(root);
  writeFiles(root, files);
  return { dir, root };
}

const siteFor = (root, config = {}, protectedPaths = []) => ({ root, config, protectedPaths });

test('resolve: a file and a directory inside the root, with their real path, relative path and stats', (t) => {
  const { root } = webRoot(t, { 'a.txt': 'a', 'sub/b.php': 'b' });
  const policy = pathPolicyFor(siteFor(root));
  const file = policy.resolve('/sub/b.php');
  assert.equal(file.real, path.join(root, 'sub', 'b.php'));
  assert.equal(file.rel, 'sub/b.php');
  assert.ok(file.stats.isFile());
  const top = policy.resolve('/');
  assert.equal(top.rel, '');
  assert.ok(top.stats.isDirectory());
  assert.deepEqual(Object.keys(policy.resolve('/missing.txt')), ['status', 'error']);
  assert.equal(policy.resolve('/missing.txt').status, 404);
  assert.equal(policy.resolve('/a.txt/x').status, 404); // ENOTDIR
});

test('resolve: dotfiles, serverSideScript.js and protected paths are 404, .well-known and allowDotfiles are not', (t) => {
  const { dir, root } = webRoot(t, {
    '.env': 'secret', 'sub/.git/config': 'x', '.well-known/acme': 'token', 'serverSideScript.js': 'code',
    'svr-config.json': '{}', 'private/key.pem': 'key', 'ok.txt': 'ok',
  });
  const policy = pathPolicyFor(siteFor(root, {}, [path.join(root, 'svr-config.json'), path.join(root, 'private'), path.join(dir, 'elsewhere')]));
  for (const hidden of ['/.env', '/sub/.git/config', '/serverSideScript.js', '/svr-config.json', '/private/key.pem', '/private']) {
    assert.deepEqual(policy.resolve(hidden), { status: 404 }, hidden);
  }
  assert.ok(policy.resolve('/.well-known/acme').stats.isFile());
  assert.ok(policy.resolve('/ok.txt').stats.isFile());
  assert.equal(policy.isHidden(path.join(root, '.env')), true);
  assert.equal(policy.isHidden(path.join(root, 'private', 'key.pem')), true);
  assert.equal(policy.isHidden(path.join(root, 'ok.txt')), false);
  const open = pathPolicyFor(siteFor(root, { allowDotfiles: true }));
  assert.ok(open.resolve('/.env').stats.isFile());
  assert.deepEqual(open.resolve('/serverSideScript.js'), { status: 404 }, 'the script is never served');
});

test('resolve: a symlink below the root is refused; with followSymlinks only while its target stays inside', (t) => {
  const { dir, root } = webRoot(t, { 'real.txt': 'inside', '../outside.txt': 'outside' });
  fs.symlinkSync(path.join(root, 'real.txt'), path.join(root, 'in-link.txt'));
  fs.symlinkSync(path.join(dir, 'outside.txt'), path.join(root, 'out-link.txt'));
  const strict = pathPolicyFor(siteFor(root));
  assert.deepEqual(strict.resolve('/in-link.txt'), { status: 404 });
  assert.deepEqual(strict.resolve('/out-link.txt'), { status: 404 });
  const following = pathPolicyFor(siteFor(root, { followSymlinks: true }));
  assert.equal(following.resolve('/in-link.txt').real, path.join(root, 'real.txt'));
  assert.deepEqual(following.resolve('/out-link.txt'), { status: 404 });
});

test('indexFile: the first index name that is a file, in SVR.JS\'s order or the names given; null when none', (t) => {
  const { root } = webRoot(t, { 'docs/index.htm': 'htm', 'docs/index.xhtml': 'x', 'php/index.php': '<?php', 'empty/x.txt': '', 'dir/index.html/inner': '' });
  const policy = pathPolicyFor(siteFor(root));
  assert.deepEqual(INDEX_FILES, ['index.html', 'index.htm', 'index.xhtml']);
  assert.equal(policy.indexFile('/docs/').rel, 'docs/index.htm');
  assert.equal(policy.indexFile('/docs').rel, 'docs/index.htm');
  assert.equal(policy.indexFile('/php/', ['index.php']).rel, 'php/index.php');
  assert.equal(policy.indexFile('/empty/'), null);
  assert.equal(policy.indexFile('/dir/'), null, 'a directory named index.html is not an index file');
});

test('pathPolicyFor: one policy per site, shared; errorStatus maps fs errors', (t) => {
  const { root } = webRoot(t, {});
  const site = siteFor(root);
  assert.equal(pathPolicyFor(site), pathPolicyFor(site));
  assert.notEqual(pathPolicyFor(site), pathPolicyFor(siteFor(root)));
  assert.equal(errorStatus({ code: 'ENOENT' }), 404);
  assert.equal(errorStatus({ code: 'EACCES' }), 403);
  assert.equal(errorStatus({ code: 'EMFILE' }), 503);
  assert.equal(errorStatus(new Error('odd')), 500);
});
