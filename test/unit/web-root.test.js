'use strict';
// webRoot.openSync decides from the opened descriptor: a file swapped for a FIFO (or a socket,
// or a device) after the path policy saw a regular file is not served, and its descriptor is
// closed. The open itself never blocks on a FIFO (O_NONBLOCK).

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { createWebRoot } = require('../../lib/pipeline/web-root');
const { makeTempDir } = require('../support/helpers');

const openDescriptors = () => fs.readdirSync('/proc/self/fd').length;

test('a FIFO where a file was is refused, its descriptor closed; a file and a directory open', { skip: process.platform !== 'linux' && 'needs /proc and mkfifo' }, () => {
  const root = fs.realpathSync(makeTempDir());
  fs.writeFileSync(path.join(root, 'page.html'), 'hello');
  fs.mkdirSync(path.join(root, 'dir'));
  execFileSync('mkfifo', [path.join(root, 'pipe.html')]);
  const webRoot = createWebRoot(root);

  const before = openDescriptors();
  assert.equal(webRoot.openSync(path.join(root, 'pipe.html')), null);
  assert.equal(openDescriptors(), before, 'the FIFO\'s descriptor is closed');

  const file = webRoot.openSync(path.join(root, 'page.html'));
  assert.ok(file.stats.isFile());
  fs.closeSync(file.fd);
  const dir = webRoot.openSync(path.join(root, 'dir'), { directory: true });
  assert.ok(dir.stats.isDirectory());
  fs.closeSync(dir.fd);
});
