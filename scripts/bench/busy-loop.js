'use strict';
// "One core kept busy by an unrelated process": a child that spins on the CPU until it is killed
// or its own time limit passes (so a crashed harness cannot leave it spinning), started before a
// measured run and killed right after it.
const { spawn } = require('child_process');

const SPIN = 'const end = Date.now() + Number(process.argv[1]); while (Date.now() < end) {}';

function startBusyLoop(maxSeconds) {
  const proc = spawn(process.execPath, ['-e', SPIN, String(Math.ceil(maxSeconds * 1000))], { stdio: 'ignore' });
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.once('error', () => {});
  return {
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
}

// Runs `work` with a busy loop beside it when `busy` is true.
async function withBusyLoop(busy, maxSeconds, work) {
  if (!busy) return work();
  const loop = startBusyLoop(maxSeconds);
  try {
    return await work();
  } finally {
    await loop.stop();
  }
}

module.exports = { startBusyLoop, withBusyLoop };
