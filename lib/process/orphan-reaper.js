'use strict';
// Workers die with their primary, stuck or not. When the primary is gone (kill -9, the OOM killer,
// a crash) a worker hears of it through its IPC channel's 'disconnect' and drains (worker.js); but
// a worker whose event loop spins in user code never runs that handler, and would keep a core and
// its sockets for ever where no cgroup kill follows (npm start, a container, another supervisor).
//
// So the primary starts one small shell, the reaper, and keeps the write end of a pipe to it. The
// kernel closes that end when the primary dies, however it dies; the reaper then gives the workers
// ORPHAN_GRACE_MS to drain and kills those still there. One shell per server costs about 1 MiB; a
// watching thread inside each worker (the other way) costs each worker a V8 isolate, about 10 MiB.
//
// The primary names each worker it forks ("PID" on a line); the reaper notes the worker's start
// time with it, so a pid the kernel has given to another process meanwhile is never killed. The
// reaper ignores the signals a terminal or a supervisor sends to the whole group: it must outlive
// the primary to do its work, and it ends by itself once the pipe is closed and the grace is over.

const { spawn } = require('node:child_process');

// The 'disconnect' drain exits within about 1.5 s (1 s to finish requests, 0.5 s for the last
// metrics report); a worker still there a second later is stuck.
const ORPHAN_GRACE_MS = 2500;

// $1: the primary's pid, $2: the grace in ms. Field 22 of /proc/PID/stat is the start time and
// field 3 the state; both are counted after the command name, which may hold spaces and ')'.
const REAPER_SCRIPT = `
trap '' INT TERM HUP
primary=$1 grace_ms=$2
stat_of() { s=$(cat /proc/$1/stat 2>/dev/null) || return 1; s=\${s##*') '}; set -- $s; echo "$1 \${20}"; }
workers=
while read -r pid; do
  kept=
  for w in $workers; do [ -e /proc/\${w%%:*} ] && kept="$kept $w"; done
  started=$(stat_of "$pid") && workers="$kept $pid:\${started#* }" || workers=$kept
done
[ -z "$workers" ] && exit 0
sleep $((grace_ms / 1000)).$((grace_ms % 1000 / 100))
for w in $workers; do
  pid=\${w%%:*}
  now=$(stat_of "$pid") || continue
  [ "\${now#* }" = "\${w#*:}" ] && [ "\${now%% *}" != Z ] || continue
  printf '%s warn worker %s: the primary (pid %s) is gone and this worker did not exit within %s ms: killed\\n' "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)" "$pid" "$primary" "$grace_ms" >&2
  kill -9 "$pid"
done
`;

// Starts the reaper; it keeps no event loop alive (unref). Returns { watch(pid) } for each worker
// forked, or a no-op when no shell can be started (the workers still drain on 'disconnect').
function startOrphanReaper(log, { graceMs = ORPHAN_GRACE_MS } = {}) {
  let reaper;
  try {
    reaper = spawn('/bin/sh', ['-c', REAPER_SCRIPT, 'svr-reaper', String(process.pid), String(graceMs)], { stdio: ['pipe', 'ignore', 'inherit'] });
  } catch (error) {
    log.warn(`cannot start the orphan reaper (${error.message}): a worker stuck in a loop would outlive a killed primary`);
    return { watch() {} };
  }
  reaper.on('error', (error) => log.warn(`orphan reaper: ${error.message}`));
  reaper.stdin.on('error', () => {}); // the reaper gone: nothing to tell it any more
  reaper.unref();
  reaper.stdin.unref?.();
  reaper.stdin._handle?.unref?.();
  return { watch: (pid) => { if (pid) reaper.stdin.write(`${pid}\n`); } };
}

module.exports = { startOrphanReaper, ORPHAN_GRACE_MS };
