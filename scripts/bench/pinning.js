'use strict';
// Running a process on one core (taskset), and the CPU time a process tree has used (/proc).
const fs = require('fs');
const { spawnSync } = require('child_process');

// [command, args] for `command args` on pin.core only; as given without a pin.
function pinned(pin, command, args) {
  return pin ? [pin.taskset, ['-c', String(pin.core), command, ...args]] : [command, args];
}

let clockTicks = null;
function ticksPerSecond() {
  if (clockTicks === null) {
    const result = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    clockTicks = Number(result.stdout) > 0 ? Number(result.stdout) : 100; // 100 on every Linux we run on
  }
  return clockTicks;
}

// utime + stime of one process, in clock ticks (fields 14 and 15 of /proc/PID/stat, counted
// after the command name, which may hold spaces).
function processTicks(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0; // gone
  }
}

function parentOf(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

// pid and all its descendants (a primary and its workers, nginx's master and its workers).
function processTree(pid) {
  const all = fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name)).map(Number);
  const parents = new Map(all.map((candidate) => [candidate, parentOf(candidate)]));
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) for (const [child, parent] of parents) if (parent === tree[i]) tree.push(child);
  return tree;
}

// CPU seconds the tree of pid has used so far (the processes alive now).
function treeCpuSeconds(pid) {
  return processTree(pid).reduce((sum, member) => sum + processTicks(member), 0) / ticksPerSecond();
}

module.exports = { pinned, treeCpuSeconds, processTree, parentOf, ticksPerSecond };
