'use strict';
// The short-lived process of mod-keys.js: loads the mods of a config file the way a worker does
// (same environment, working directory = the web root; on past a mod that fails, so that each
// one that fails is reported), runs the validators their configValidators declare on the raw
// config's values, writes one JSON report on fd 3, exits.
// Mod code runs here and in workers, never in the primary.

const fs = require('node:fs');
const path = require('node:path');
const { loadEveryMod, loadReport, ModLoadError, DEFAULT_MODS_DIRECTORY } = require('./mods');
const { installModEnvironment, svrFile } = require('./environment');
const { svrjsDirectories } = require('./legacy-config-files');
const { stateDirectory } = require('../../product');

const quietLog = { info() {}, warn() {}, error() {} };

function readRaw(configFile) {
  try {
    const raw = JSON.parse(fs.readFileSync(configFile, 'utf8').replace(/^\uFEFF/, ''));
    return raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : {};
  } catch {
    return {}; // loadConfig, in the primary, reports what is wrong with the file
  }
}

function resolved(raw, key, base) {
  const value = raw[key];
  return typeof value === 'string' && value !== '' ? path.resolve(base, value) : undefined;
}

// checkOnly (svr --check, often run as root): copy no settings file into the state directory.
function main(configFile, checkOnly) {
  const raw = readRaw(configFile);
  const base = path.dirname(configFile);
  const modsDir = resolved(raw, 'modsDirectory', base);
  const state = stateDirectory({ stateDirectory: resolved(raw, 'stateDirectory', base) });
  installModEnvironment({ stateDirectory: state, svrFile: svrFile(), log: quietLog });
  applyEnvironment(raw.environmentVariables);
  const wwwroot = resolved(raw, 'wwwroot', base);
  if (wwwroot) {
    try { process.chdir(wwwroot); } catch { /* the primary reports a bad wwwroot */ }
  }
  const report = { keys: {}, errors: [], warnings: [], infos: [] };
  try {
    const dir = modsDir || DEFAULT_MODS_DIRECTORY;
    const svrjsDirs = checkOnly ? [] : svrjsDirectories({ configFile, config: raw, root: wwwroot });
    const loaded = loadEveryMod(dir, { required: modsDir !== undefined, stateDirectory: state, svrjsDirectories: svrjsDirs });
    report.errors.push(...loaded.errors.map((error) => error.message));
    const { infos, warnings } = loadReport(dir, loaded);
    report.infos.push(...infos);
    report.warnings.push(...warnings);
    for (const mod of loaded.mods) {
      for (const [key, validate] of Object.entries(mod.configValidators)) {
        report.keys[key] = verdict(validate, raw[key]);
      }
    }
  } catch (error) {
    if (!(error instanceof ModLoadError)) throw error;
    report.errors.push(error.message);
  }
  fs.writeSync(3, JSON.stringify(report));
  process.exit(0);
}

// `environmentVariables`, set before the mods load as a worker sets them (pipeline/index.js).
function applyEnvironment(variables) {
  if (!variables || typeof variables !== 'object' || Array.isArray(variables)) return;
  for (const [name, value] of Object.entries(variables)) process.env[name] = String(value);
}

function verdict(validate, value) {
  if (value === undefined) return { valid: true }; // the key is absent: nothing to check
  try {
    return { valid: validate(value) === true };
  } catch (error) {
    return { error: error && error.message ? error.message : String(error) };
  }
}

main(path.resolve(process.argv[2]), process.argv[3] === '--check');
