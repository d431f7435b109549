'use strict';
// Preloaded into a server's processes (node --require) by scripts/bench-alloc.js; does something
// only in a cluster worker, and only when SVR_ALLOC_PROBE_DIR names a directory. It measures the
// bytes the worker's JavaScript heap allocates and promotes between two SIGUSR2 signals:
//
//   load          writes DIR/PID.worker (the bench finds the worker's pid there)
//   1st SIGUSR2   two full collections (a clean start), then v8.GCProfiler starts; writes DIR/PID.started
//   2nd SIGUSR2   the profiler stops; writes DIR/PID.json:
//                   allocated  bytes allocated in the window: every collection's heap size before it
//                              minus the size after the one before (or the start), plus the growth
//                              since the last one
//                   promoted   bytes the scavenges moved into the old generation (its growth
//                              across each scavenge)
//                   scavenges, collections, each ([kind, KB allocated before, KB promoted] per
//                   collection, in order)
//                 and, with SVR_ALLOC_PROBE_SITES=all, DIR/PID.sites.json: where the bytes were
//                 allocated, from V8's sampling heap profiler (one sample per 64 bytes on average,
//                 objects collected since included), as [{ site, bytes }], largest first; with
//                 SVR_ALLOC_PROBE_SITES=kept, only what had not been collected by the end
//
// Nothing here runs per request; the window's only own allocation is the profiler's bookkeeping
// per collection.

const fs = require('node:fs');
const path = require('node:path');
const v8 = require('node:v8');
const cluster = require('node:cluster');

const OLD_SPACES = new Set(['old_space', 'code_space', 'map_space']);

function usedBytes(spaces) {
  let total = 0;
  for (const space of spaces) total += space.spaceUsedSize ?? space.space_used_size;
  return total;
}

function oldBytes(spaces) {
  let total = 0;
  for (const space of spaces) {
    if (OLD_SPACES.has(space.spaceName ?? space.space_name)) total += space.spaceUsedSize ?? space.space_used_size;
  }
  return total;
}

// The window's figures from the profiler's per-collection heap statistics.
function summarise(startUsed, statistics, endUsed) {
  let allocated = 0;
  let promoted = 0;
  let scavenges = 0;
  const each = []; // per collection: [kind, KB allocated before it, KB promoted by it]
  let previousAfter = startUsed;
  for (const gc of statistics) {
    const before = gc.beforeGC.heapSpaceStatistics;
    const after = gc.afterGC.heapSpaceStatistics;
    const since = usedBytes(before) - previousAfter;
    allocated += since;
    previousAfter = usedBytes(after);
    const moved = gc.gcType === 'Scavenge' ? oldBytes(after) - oldBytes(before) : 0;
    if (gc.gcType === 'Scavenge') {
      scavenges++;
      promoted += moved;
    }
    each.push([gc.gcType, Math.round(since / 1024), Math.round(moved / 1024)]);
  }
  allocated += endUsed - previousAfter;
  return { allocated, promoted, scavenges, collections: statistics.length, each };
}

function writeAside(file, text) {
  fs.writeFileSync(`${file}.part`, text);
  fs.renameSync(`${file}.part`, file);
}

// The sampling heap profiler over the inspector protocol, counting what the collector freed too.
function samplingSites(includeCollected) {
  const inspector = require('node:inspector');
  const session = new inspector.Session();
  session.connect();
  return {
    start() {
      session.post('HeapProfiler.startSampling', {
        samplingInterval: 64, includeObjectsCollectedByMajorGC: includeCollected, includeObjectsCollectedByMinorGC: includeCollected,
      });
    },
    stop(done) {
      session.post('HeapProfiler.stopSampling', (error, result) => {
        if (error) throw error;
        done(bySite(result.profile));
      });
    },
  };
}

// Bytes per allocating function (name file:line), the callers of each kept as a short stack.
function bySite(profile) {
  const totals = new Map();
  const walk = (node, stack) => {
    const frame = node.callFrame;
    const here = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/lib\//, 'lib/')}:${frame.lineNumber + 1}`;
    const path = [here, ...stack].slice(0, 4);
    if (node.selfSize > 0) {
      const key = path.join(' < ');
      totals.set(key, (totals.get(key) || 0) + node.selfSize);
    }
    for (const child of node.children) walk(child, path);
  };
  walk(profile.head, []);
  return [...totals].map(([site, bytes]) => ({ site, bytes })).sort((a, b) => b.bytes - a.bytes);
}

function install(dir) {
  v8.setFlagsFromString('--expose-gc');
  const gc = require('node:vm').runInNewContext('gc');
  const file = (suffix) => path.join(dir, `${process.pid}.${suffix}`);
  fs.writeFileSync(file('worker'), '');
  let profiler = null;
  let startUsed = 0;
  const sitesMode = process.env.SVR_ALLOC_PROBE_SITES;
  const sites = sitesMode === 'all' || sitesMode === 'kept' ? samplingSites(sitesMode === 'all') : null;
  process.on('SIGUSR2', () => {
    if (profiler === null) {
      gc();
      gc();
      startUsed = usedBytes(v8.getHeapSpaceStatistics());
      profiler = new v8.GCProfiler();
      profiler.start();
      if (sites) sites.start();
      fs.writeFileSync(file('started'), '');
      return;
    }
    const endUsed = usedBytes(v8.getHeapSpaceStatistics());
    const { statistics } = profiler.stop();
    profiler = null;
    if (sites) sites.stop((list) => writeAside(file('sites.json'), JSON.stringify(list)));
    // Written aside and renamed: the bench reads the file as soon as it exists.
    writeAside(file('json'), JSON.stringify(summarise(startUsed, statistics, endUsed)));
  });
}

if (cluster.isWorker && process.env.SVR_ALLOC_PROBE_DIR) install(process.env.SVR_ALLOC_PROBE_DIR);

module.exports = { summarise };
