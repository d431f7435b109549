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
    process.stderr.write(`svr: ${error.message}\n\n${USAGE}\n`);
    process.exit(1);
  }
  if (options.help) return console.log(USAGE);
  if (options.version) return console.log(require('./lib/product').versionString());
  const path = require('node:path');
  const { DEFAULT_CONFIG_FILE } = require('./lib/product');
  options.configFile = path.resolve(options.configFile ?? DEFAULT_CONFIG_FILE);
  if (options.check) return check(options);
  if (options.singleThreaded) return require('./lib/process/single-threaded').runSingleThreaded(options);
  require('./lib/process/primary').runPrimary(options);
}

// The same validation a start does (mods' config keys included), without generating anything.
function check(options) {
  const { readConfig } = require('./lib/process/primary');
  const { errors, warnings = [] } = readConfig(options, { checkOnly: true });
  for (const warning of warnings) process.stderr.write(`warning: ${warning}\n`);
  if (errors.length === 0) {
    console.log(`${options.configFile}: ok`);
    return;
  }
  for (const error of errors) process.stderr.write(`${error}\n`);
  process.stderr.write(`${options.configFile}: ${errors.length} error${errors.length === 1 ? '' : 's'}\n`);
  process.exitCode = 1;
}
