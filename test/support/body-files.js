'use strict';
// The files svr keeps request bodies in (lib/pipeline/upstream/request-body.js) that this process
// holds open: the pipeline runs in the test's process. Each is a /proc/self/fd link target, such
// as '/tmp/svr-body-<hex> (deleted)'.

const fs = require('node:fs');

function openBodyFiles() {
  const found = [];
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      const target = fs.readlinkSync(`/proc/self/fd/${fd}`);
      if (target.includes('svr-body-')) found.push(target);
    } catch { /* closed meanwhile */ }
  }
  return found;
}

module.exports = { openBodyFiles };
