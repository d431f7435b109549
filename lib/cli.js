'use strict';
// The command line. minimist does the parsing; this file knows which commands and options exist,
// turns typos into errors that name the option (and the one that was probably meant), and checks
// the numeric ones.

const minimist = require('minimist');
const { closestKey } = require('./config/did-you-mean');

const STRING_OPTIONS = ['config', 'port', 'workers', 'control-socket'];
const COMMANDS = ['serve', 'check', 'reload', 'reopen-logs', 'certs'];
const BOOLEAN_OPTIONS = ['single-threaded', 'check', 'version', 'help', 'disable-mods', 'listing', 'scripts'];
const ALIASES = { h: 'help', v: 'version', c: 'config' };
// Options only `svr serve` takes, and the ones it refuses (it has no config file).
const SERVE_ONLY = ['listing', 'scripts'];
const NOT_WITH_SERVE = ['config', 'check', 'control-socket'];
const WITH_A_CONFIG = {
  listing: 'with a config file, set "enableDirectoryListing": true',
  scripts: 'with a config file, serverSideScript.js and the mods run unless --disable-mods is given',
};

const USAGE = `Usage: svr serve [DIR] [--port N] [--listing] [--scripts]
                                serve the folder DIR (default: the current directory) with no
                                config file, on port 8080 or, when that is taken, a free port
       svr [options]            start the server with its config file
       svr check [options]      the same as --check
       svr reload [options]     ask the running svr to reload its config; prints the outcome,
                                exits 0 when the new config serves, 1 when svr refused it
       svr reopen-logs          ask the running svr to reopen its log files (after rotation)
       svr certs [options]      list the ACME certificates in the state directory: names,
                                issuer, expiry, next renewal, last error

svr serve:
      --port N          listen on port N
      --listing         list the contents of directories without an index file (off: 403)
      --scripts         run DIR/serverSideScript.js and the mods (off: neither runs)
                        Every other setting is the config schema's default; --workers and
                        --single-threaded work as below.

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
  const positional = [];
  let command = null;
  const args = minimist(argv, {
    string: STRING_OPTIONS,
    boolean: BOOLEAN_OPTIONS,
    alias: ALIASES,
    unknown: (arg) => {
      if (command === null && COMMANDS.includes(arg)) command = arg;
      else if (!arg.startsWith('-')) positional.push(arg);
      else unknown.push(arg);
      return false;
    },
  });
  if (unknown.length > 0) throw new UsageError(describeUnknownOption(unknown[0]));
  checkPositional(command, positional);
  for (const name of STRING_OPTIONS) {
    if (Array.isArray(args[name])) throw new UsageError(`--${name} is given more than once`);
    if (args[name] === '') throw new UsageError(`--${name} needs a value`);
  }
  checkServeOptions(command, args, argv);
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
    serve: command === 'serve' ? { dir: positional[0] ?? '.', listing: args.listing, scripts: args.scripts } : null,
  };
}

// `svr serve` takes one folder; nothing else takes a word that is not a command.
function checkPositional(command, positional) {
  const allowed = command === 'serve' ? 1 : 0;
  if (positional.length <= allowed) return;
  const extra = positional[allowed];
  if (command === 'serve') throw new UsageError(`svr serve takes one folder, found "${positional[0]}" and "${extra}"`);
  const guess = command === null ? closestKey(extra, COMMANDS) : null;
  throw new UsageError(`unexpected argument "${extra}"${guess ? `; did you mean "svr ${guess}"?` : ''}`);
}

function checkServeOptions(command, args, argv) {
  const given = (name) => argv.some((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`) || arg === `--no-${name}` ||
    Object.entries(ALIASES).some(([short, long]) => long === name && arg === `-${short}`));
  if (command === 'serve') {
    const refused = NOT_WITH_SERVE.find(given);
    if (refused) throw new UsageError(`svr serve takes no --${refused}: it serves a folder without a config file`);
    if (args['disable-mods']) throw new UsageError('svr serve runs no scripts unless --scripts is given: --disable-mods is not needed');
    return;
  }
  const serveOnly = SERVE_ONLY.find(given);
  if (serveOnly) throw new UsageError(`--${serveOnly} is an option of svr serve (svr serve DIR --${serveOnly}); ${WITH_A_CONFIG[serveOnly]}`);
}

// "unknown option --chek; did you mean --check?"
function describeUnknownOption(arg) {
  const name = arg.replace(/^--?/, '').replace(/=.*$/, '');
  const known = [...STRING_OPTIONS, ...BOOLEAN_OPTIONS];
  const guess = name.length > 1 ? closestKey(name, known) : null;
  return `unknown option ${arg}${guess ? `; did you mean --${guess}?` : ''}`;
}

function parseInteger(name, text, min, max) {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) {
    throw new UsageError(`${name} expects an integer from ${min} to ${max}, found "${text}"`);
  }
  return value;
}

module.exports = { parseCommandLine, UsageError, USAGE };
