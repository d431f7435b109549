#!/usr/bin/env node
'use strict';
// svr: one clustered web server. The primary reads and validates svr-config.json and
// supervises the workers; each worker serves with the config the primary gives it.

const cluster = require('node:cluster');

if (cluster.isWorker) {
  require('./lib/process/worker').runClusterWorker();
} else {
  main();
}

function main() {
  const { parseCommandLine, UsageError, USAGE } = require('./lib/cli');
  let options;
  try {
    options = parseCommandLine(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`svr: ${error.message}\nRun "svr --help" for the commands and options.\n`);
    process.exit(1);
  }
  if (options.help) return console.log(USAGE);
  if (options.version) return console.log(require('./lib/product').versionString());
  if (options.command === 'reload' || options.command === 'reopen-logs') return control(options);
  if (options.serve) return serve(options);
  const path = require('node:path');
  const { DEFAULT_CONFIG_FILE } = require('./lib/product');
  options.configFile = path.resolve(options.configFile ?? DEFAULT_CONFIG_FILE);
  if (options.check) return check(options);
  if (options.command === 'certs') return certs(options);
  start(options);
}

function start(options) {
  if (options.singleThreaded) return require('./lib/process/single-threaded').runSingleThreaded(options);
  return require('./lib/process/primary').runPrimary(options);
}

// svr serve [DIR]: the folder with no config file, on --port or a free port; scripts only when asked.
async function serve(options) {
  const { choosePort, describeServe } = require('./lib/config/serve-folder');
  const log = require('./lib/log');
  if (options.port === undefined) {
    try {
      options.port = await choosePort();
    } catch (error) {
      log.error(`svr serve: ${error.message}; give one with --port`);
      process.exit(1);
    }
  }
  options.configFile = null;
  options.disableMods = !options.serve.scripts;
  log.info(describeServe(options.serve));
  start(options);
}

// svr check: the start's own steps (process/start.js), without forking and generating nothing:
// what it accepts, a start accepts. Prints every problem, or "ok".
async function check(options) {
  const unreadable = require('./lib/config/unreadable').describeUnreadable(options.configFile, 'svr check');
  if (unreadable) {
    process.stderr.write(`${unreadable}\n`);
    process.exitCode = 1;
    return;
  }
  const { prepareStart } = require('./lib/process/start');
  const { errors, warnings } = await prepareStart(options, { checkOnly: true });
  for (const warning of warnings) process.stderr.write(`warning: ${warning}\n`);
  if (errors.length === 0) {
    console.log(`${options.configFile}: ok`);
    return;
  }
  for (const error of errors) process.stderr.write(`${error}\n`);
  process.stderr.write(`${options.configFile}: ${errors.length} error${errors.length === 1 ? '' : 's'}\n`);
  process.exitCode = 1;
}

// svr certs: the ACME certificates in the config's state directory.
function certs(options) {
  const { loadConfig } = require('./lib/config/load');
  const { config, errors } = loadConfig(options.configFile);
  if (errors.length) {
    for (const error of errors) process.stderr.write(`${error}\n`);
    process.exitCode = 1;
    return;
  }
  console.log(require('./lib/acme/report').describeCertificates(config).join('\n'));
}

// svr reload / svr reopen-logs: ask the running primary, print its answer, exit 0 or 1.
async function control(options) {
  const { clientSocketPath, sendControlCommand } = require('./lib/process/control');
  const outcome = await sendControlCommand(clientSocketPath(options.controlSocket), options.command);
  (outcome.ok ? process.stdout : process.stderr).write(`svr ${options.command}: ${outcome.message}\n`);
  process.exitCode = outcome.ok ? 0 : 1;
}
