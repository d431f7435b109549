'use strict';
// The start, as a list of steps the primary awaits before it forks a worker (and again before a
// reload forks the new ones). `svr check` runs the very same steps with checkOnly, so a config
// check accepts is a config a start accepts, and a config a worker would refuse fails the check.
//
//   prepareStart(options, { checkOnly }) -> Promise<{ config, errors, problem, warnings, infos }>
//     options: the command line's { configFile, port, workers, disableMods, serve }
//     (serve: `svr serve DIR`'s { dir, listing }, with configFile null: the config is made from
//     the command line, config/serve-folder.js, and no file can hold a mod's keys)
//     config:  the validated config the workers get (null when there are errors)
//     errors:  every problem found, one line each, naming the file (and key, or line)
//     problem: what the first failing step was about ("cannot load the mods", ...)
//
// The steps (START_STEPS), in order. Each may be async: the primary keeps answering its
// workers, signals and `svr reload` while one waits.
//   mods          the keys mods declare (configValidators), read in a short-lived child process
//                 that loads the mods as a worker does; a mod that throws while loading is
//                 reported with its file. Mod code never runs in the primary.
//   config        the config file: JSON, the schema (with the mods' keys) and its defaults, what
//                 a schema cannot say, paths; then --port and --workers.
//   acme-review   with `acme`: a name to ask for, no cert/key of the user's, a warning when the
//                 CA's ports (80, 443) are not this config's (acme/review.js); at start, the
//                 certificate already in the state directory is named in the log. Obtaining one
//                 waits for the workers (they answer the CA): process/acme.js, after the fork.
//   certificates  HTTPS: the certificate files checked; at start (never with checkOnly), the
//                 self-signed pair made or renewed before any worker reads it.
//   pipeline      every compiler a worker runs when it builds its pipeline (proxy rules, rewrite
//                 map, access rules, virtual hosts, ...: pipeline/index.js checkPipeline), and
//                 serverSideScript.js compiled without running any of it.
// The first two are gates: a step after them needs what they read, so their errors end the
// start. The steps after them each need only the valid config: all of them run, and every
// problem is reported at once. A new step (obtaining a certificate, say) goes into the list
// where what it needs is ready; it gets the start record below and returns its error lines.

const log = require('../log');
const { loadConfig, checkConfig } = require('../config/load');
const { serveFolderConfig, SERVE_LABEL } = require('../config/serve-folder');
const { readModKeys } = require('../pipeline/scripting/mod-keys');
const { ensureCertificate } = require('../net/certificate');
const { checkPipeline } = require('../pipeline');
const { reviewAcme, storedCertificate } = require('../acme/review');

const START_STEPS = [
  { name: 'mods', gate: true, problem: 'cannot load the mods', run: readMods },
  { name: 'config', gate: true, problem: 'the config is invalid', run: readConfigFile },
  { name: 'acme-review', problem: 'the config is invalid', run: prepareAcme },
  { name: 'certificates', problem: 'the config is invalid', run: prepareCertificates },
  { name: 'pipeline', problem: 'cannot start', run: compilePipeline },
];

async function prepareStart(options, { checkOnly = false } = {}) {
  // What the steps share: each reads what the ones before it put here.
  const start = { options, checkOnly, validators: {}, config: null, warnings: [], infos: [] };
  const errors = [];
  let problem = null;
  for (const step of START_STEPS) {
    const found = (await step.run(start)) || [];
    if (found.length > 0 && problem === null) problem = step.problem;
    errors.push(...found);
    if (errors.length > 0 && step.gate) break;
  }
  const { warnings, infos } = start;
  return { config: errors.length === 0 ? start.config : null, errors, problem, warnings, infos };
}

// With --disable-mods a mod that cannot load is only a warning (the workers load none).
async function readMods(start) {
  if (start.options.serve) return [];
  const mods = await readModKeys(start.options.configFile, { checkOnly: start.checkOnly });
  start.infos.push(...mods.infos);
  start.warnings.push(...mods.warnings);
  start.validators = mods.validators;
  if (!start.options.disableMods) return mods.errors;
  start.warnings.push(...mods.errors.map((error) => `--disable-mods: ${error}`));
  return [];
}

function readConfigFile(start) {
  const { options } = start;
  const { config, errors, warnings } = options.serve
    ? checkConfig(serveFolderConfig(options.serve, options.port), { file: SERVE_LABEL, configFile: null, baseDir: process.cwd() })
    : loadConfig(options.configFile, { extraValidators: start.validators });
  start.warnings.push(...warnings);
  if (errors.length > 0) return errors;
  if (options.port !== undefined) config.port = options.port;
  if (options.workers !== undefined) config.workers = options.workers;
  start.config = config;
  return [];
}

function prepareAcme(start) {
  const { config, options, checkOnly } = start;
  const { errors, warnings } = reviewAcme(config);
  start.warnings.push(...warnings.map((message) => `${options.configFile}: acme: ${message}`));
  if (!checkOnly && errors.length === 0) {
    const stored = storedCertificate(config);
    if (stored) start.infos.push(stored);
  }
  return errors.map((message) => `${options.configFile}: acme: ${message}`);
}

function prepareCertificates(start) {
  const { config, options, checkOnly } = start;
  return ensureCertificate(config, { configFile: options.configFile, log, checkOnly }).errors;
}

function compilePipeline(start) {
  return checkPipeline(start.config, { configFile: start.options.configFile, disableMods: start.options.disableMods });
}

module.exports = { prepareStart, START_STEPS };
