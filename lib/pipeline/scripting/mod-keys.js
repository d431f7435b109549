'use strict';
// The config keys the mods declare (configValidators), read WITHOUT loading any mod in the
// calling process: the primary must never run user code (a mod whose load-time timer throws
// would kill it, and one that allocates at load would grow it at every reload).
//
//   readModKeys(configFile, { timeoutMs, checkOnly }) -> Promise<{ validators, errors, warnings, infos }>
//   (checkOnly: svr --check, which copies no legacy mod's settings file into the state directory)
//
// A short-lived child process (mod-keys-child.js) loads the mods, runs each declared key's
// validator on that key's value in the raw config file, and reports, on file descriptor 3,
// { keys: { key: { valid } | { error } }, errors, warnings, infos }. validators are stand-ins
// returning the child's verdicts, for loadConfig's extraValidators. A child that does not answer
// within timeoutMs (modsLoadTimeout, default 10 s), crashes, or exits without a report gives an
// error naming the mods directory; whatever the mod printed on stderr is quoted (last lines).
// When the mods directory holds no mod (the usual case), the report is made here without a child:
// listing a directory runs no mod code, and a Node process costs ~85 ms of CPU at every start.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const { listMods, loadReport, ModLoadError, DEFAULT_MODS_DIRECTORY } = require('./mods');

const CHILD = path.join(__dirname, 'mod-keys-child.js');
const DEFAULT_TIMEOUT_MS = 10000;
const STDERR_LINES = 5;
const STDERR_KEPT_BYTES = 64 * 1024;

// The config file as parsed JSON, or {} (loadConfig, in the primary, reports what is wrong).
function readRawConfig(configFile) {
  try {
    const raw = JSON.parse(fs.readFileSync(configFile, 'utf8').replace(/^\uFEFF/, ''));
    return raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : {};
  } catch {
    return {};
  }
}

// modsLoadTimeout from the raw file (the schema check reports a bad value; the default is used
// meanwhile).
function timeoutOfConfigFile(configFile) {
  const value = readRawConfig(configFile).modsLoadTimeout;
  return Number.isInteger(value) && value > 0 ? value : DEFAULT_TIMEOUT_MS;
}

// The child's report when the mods directory (resolved as the child does) lists no mod; null when
// there are mods or the listing fails (the child then loads them and words any error).
function reportWithoutMods(configFile) {
  const value = readRawConfig(configFile).modsDirectory;
  const configured = typeof value === 'string' && value !== '' ? path.resolve(path.dirname(configFile), value) : undefined;
  const dir = configured || DEFAULT_MODS_DIRECTORY;
  let listing;
  try {
    listing = listMods(dir, { required: configured !== undefined });
  } catch (error) {
    if (error instanceof ModLoadError) return null;
    throw error;
  }
  if (listing.mods.length > 0) return null;
  const { infos, warnings } = loadReport(dir, listing);
  return { validators: {}, errors: [], warnings, infos };
}

// Async: the primary keeps answering its workers (heartbeats, reload requests) while the child works.
async function readModKeys(configFile, { timeoutMs = timeoutOfConfigFile(configFile), env = process.env, checkOnly = false } = {}) {
  const withoutMods = reportWithoutMods(configFile);
  if (withoutMods) return withoutMods;
  const result = await runChild(configFile, { timeoutMs, env, checkOnly });
  const tail = lastLines(result.stderr);
  if (result.timedOut) {
    return failure(`loading the mods to read their configValidators took longer than ${timeoutMs} ms (modsLoadTimeout); a mod hangs while loading${tail}`);
  }
  let report = null;
  try {
    report = result.report ? JSON.parse(result.report) : null;
  } catch { /* below */ }
  if (!report) {
    const how = result.signal ? `was killed by ${result.signal}` : `exited with code ${result.status}`;
    return failure(`the process loading the mods ${how} before reporting their configValidators${tail}`);
  }
  const validators = {};
  for (const [key, verdict] of Object.entries(report.keys || {})) {
    validators[key] = () => {
      if (verdict.error !== undefined) throw new Error(verdict.error);
      return verdict.valid;
    };
  }
  return { validators, errors: report.errors || [], warnings: report.warnings || [], infos: report.infos || [] };
}

// The child's stderr and report (fd 3) once it has exited: { status, signal, stderr, report,
// timedOut }. At timeoutMs it is killed and the answer does not wait for its pipes (a process the
// mod started may still hold them).
function runChild(configFile, { timeoutMs, env, checkOnly }) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CHILD, configFile, ...(checkOnly ? ['--check'] : [])], { stdio: ['ignore', 'ignore', 'pipe', 'pipe'], env });
    const stderr = [];
    const report = [];
    child.stdio[2].on('data', (chunk) => {
      stderr.push(chunk); // only its last lines are quoted: keep the last STDERR_KEPT_BYTES or so
      while (stderr.length > 1 && stderr.reduce((sum, c) => sum + c.length, 0) > STDERR_KEPT_BYTES) stderr.shift();
    });
    child.stdio[3].on('data', (chunk) => report.push(chunk));
    // A primary that exits meanwhile (a stop during the start) takes the child with it.
    const killChild = () => child.kill('SIGKILL');
    process.once('exit', killChild);
    const settle = (outcome) => {
      clearTimeout(timer);
      process.off('exit', killChild);
      resolve({ stderr: Buffer.concat(stderr).toString('utf8'), report: Buffer.concat(report).toString('utf8'), ...outcome });
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      settle({ timedOut: true });
    }, timeoutMs);
    child.on('error', (error) => settle({ status: null, signal: null, spawnError: error }));
    child.on('close', (status, signal) => settle({ status, signal }));
  });
}

function failure(message) {
  return { validators: {}, errors: [message], warnings: [], infos: [] };
}

function lastLines(text) {
  const lines = text.split('\n').map((line) => line.trimEnd()).filter(Boolean);
  if (lines.length === 0) return '';
  return `; its stderr ends with:\n    ${lines.slice(-STDERR_LINES).join('\n    ')}`;
}

module.exports = { readModKeys };
