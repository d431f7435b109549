'use strict';
// The files svr keeps request bodies in (lib/pipeline/upstream/request-body.js) that this process
// holds open: the pipeline runs in the test's process. Each is a /proc/self/fd link target, such
// as '/tmp/svr-body-<hex> (deleted)'. bodyFileLinks() gives their /proc/self/fd/N paths instead,
// through which a test can reach the unlinked file (stat it, cut it short).

const fs = require('node:fs');

function bodyFiles() {
  const found = [];
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    const link = `/proc/self/fd/${fd}`;
    try {
      const target = fs.readlinkSync(link);
      if (target.includes('svr-body-')) found.push({ link, target });
    } catch { /* closed meanwhile */ }
  }
  return found;
}

const openBodyFiles = () => bodyFiles().map((file) => file.target);
const bodyFileLinks = () => bodyFiles().map((file) => file.link);

module.exports = { openBodyFiles, bodyFileLinks };
