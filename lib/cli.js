'use strict';
// The command line. minimist does the parsing; this file knows which options exist,
// turns typos into errors that name the option, and checks the numeric ones.

const minimist = require('minimist');

const STRING_OPTIONS = ['config', 'port', 'workers', 'control-socket'];
const COMMANDS = ['check', 'reload', 'reopen-logs', 'certs'];
const BOOLEAN_OPTIONS = ['single-threaded', 'check', 'version', 'help', 'disable-mods'];
const ALIASES = { h: 'help', v: 'version', c: 'config' };

const USAGE = `Usage: svr [options]            start the server
       svr check [options]      the same as --check
       svr reload [options]     ask the running svr to reload its config; prints the outcome,
                                exits 0 when the new config serves, 1 when svr refused it
       svr reopen-logs          ask the running svr to reopen its log files (after rotation)
       svr certs [options]      list the ACME certificates in the state directory: names,
                                issuer, expiry, next renewal, last error

Options:
  -c, --config FILE     config file (default: config/svr-config.json next to svr.js)
      --port N          listen on port N instead of the config's "port"
      --workers N       run N worker processes instead of the config's "workers"
      --single-threaded run in one process, without the cluster (for debugging)
      --disable-mods    start without mods and without serverSideScript.js
      --check           run the start's checks without starting: print every problem
                        or "ok", exit 1 or 0
      --control-socket PATH  the running svr's control socket, for reload and reopen-logs
                        (default: $RUNTIME_DIRECTORY/control.sock, set by systemd; svr reload
                        also tries /run/svr/control.sock)
  -v, --version         print the version and exit
  -h, --help            print this help and exit

Signals: SIGHUP reloads the config and replaces workers one at a time (svr reload does the
same and reports the outcome); SIGTERM or SIGINT stops gracefully.`;

class UsageError extends Error {}

function parseCommandLine(argv) {
  const unknown = [];
  let command = null;
  const args = minimist(argv, {
    string: STRING_OPTIONS,
    boolean: BOOLEAN_OPTIONS,
    alias: ALIASES,
    unknown: (arg) => {
      if (command === null && COMMANDS.includes(arg)) command = arg;
      else unknown.push(arg);
      return false;
    },
  });
  if (unknown.length > 0) throw new UsageError(describeUnknown(unknown[0]));
  for (const name of STRING_OPTIONS) {
    if (Array.isArray(args[name])) throw new UsageError(`--${name} is given more than once`);
    if (args[name] === '') throw new UsageError(`--${name} needs a value`);
  }
  return {
    command,
    configFile: args.config,
    controlSocket: args['control-socket'],
    port: args.port === undefined ? undefined : parseInteger('--port', args.port, 0, 65535),
    workers: args.workers === undefined ? undefined : parseInteger('--workers', args.workers, 1, 1024),
    singleThreaded: args['single-threaded'],
    disableMods: args['disable-mods'],
    check: args.check || command === 'check',
    version: args.version,
    help: args.help,
  };
}

function describeUnknown(arg) {
  return arg.startsWith('-') ? `unknown option ${arg}` : `unexpected argument "${arg}"`;
}

function parseInteger(name, text, min, max) {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) {
    throw new UsageError(`${name} expects an integer from ${min} to ${max}, found "${text}"`);
  }
  return value;
}

module.exports = { parseCommandLine, UsageError, USAGE };
