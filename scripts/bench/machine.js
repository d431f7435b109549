'use strict';
// What the run's machine was: CPU, cores, memory, kernel and the load average at the start, kept in
// the results JSON and printed at the head of docs/performance-latest.md.
const fs = require('fs');
const os = require('os');
const path = require('path');
const { availableCores } = require('./servers');

// The kernel's own words on page-table isolation (meltdown) and retpolines (spectre_v2), which
// make every system call dearer for every server alike: the run records them beside the kernel,
// so that runs on differently set-up kernels can be told apart. null where the kernel does not say.
const MITIGATIONS = ['meltdown', 'spectre_v2'];

function kernelMitigations(dir = '/sys/devices/system/cpu/vulnerabilities') {
  const found = {};
  for (const name of MITIGATIONS) {
    try {
      found[name] = fs.readFileSync(path.join(dir, name), 'utf8').trim();
    } catch {
      found[name] = null;
    }
  }
  return found;
}

function machineInfo() {
  let cpuModel = os.cpus()[0] ? os.cpus()[0].model : 'unknown';
  try {
    const match = fs.readFileSync('/proc/cpuinfo', 'utf8').match(/^model name\s*:\s*(.+)$/m);
    if (match) cpuModel = match[1].trim();
  } catch {
    // not Linux: keep os.cpus()
  }
  return {
    nproc: availableCores(),
    cpuModel,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    kernel: `${os.type()} ${os.release()}`,
    mitigations: kernelMitigations(),
    loadAverageAtStart: os.loadavg().map((value) => Number(value.toFixed(2))),
  };
}

module.exports = { machineInfo, kernelMitigations };
