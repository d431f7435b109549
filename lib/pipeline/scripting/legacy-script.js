'use strict';
// serverSideScript.js with SVR.JS's "legacy" semantics.
//
// The file's text is the BODY of a function that runs for every request that reaches it. It is
// compiled once per worker (at start and on reload), never per request, with vm.compileFunction
// and its real file name, so stack traces point into the user's file at the right line.
//
//   (module scope, once per worker)  require, module, exports, __filename, __dirname (SVR.JS's
//                                     temp/ directory: see compileServerSideScript),
//                                     os, http, https, url, fs, path, crypto, stream, readline,
//                                     filterHeaders, var customvar1..customvar4 (persist
//                                     across requests in this worker)
//   (per request, the 22 SVR.JS parameters)
//     req, res, serverconsole, responseEnd, href, ext, uobject, search, defaultpage, users,
//     page404, head, foot, fd, elseCallback, configJSON, callServerError, getCustomHeaders,
//     origHref, redirect, parsePostData, authUser
//   var disableEndElseCallbackExecute = false;
//   function checkHostname(hostname), function checkHref(destHref)   (about this request)
//   <the script>
//   if (!disableEndElseCallbackExecute) elseCallback();
//
// The body is sloppy-mode code (compileFunction does not add "use strict"), so the documented
// `disableEndElseCallbackExecute = true;` without `var` assigns the function's variable; a
// top-level `return;` ends the script before the automatic elseCallback().

const fs = require('node:fs');
const path = require('node:path');
// node:vm and node:module are required once there is a script: a site without one does without.
const { hostMatches } = require('../../http/host');

const SCRIPT_NAME = 'serverSideScript.js';

const MODULE_PARAMS = [
  'require', 'module', 'exports', '__filename', '__dirname',
  'os', 'http', 'https', 'url', 'fs', 'path', 'crypto', 'stream', 'readline',
  'filterHeaders', '__svrCheckHostname',
];

const REQUEST_PARAMS = [
  'req', 'res', 'serverconsole', 'responseEnd', 'href', 'ext', 'uobject', 'search', 'defaultpage',
  'users', 'page404', 'head', 'foot', 'fd', 'elseCallback', 'configJSON', 'callServerError',
  'getCustomHeaders', 'origHref', 'redirect', 'parsePostData', 'authUser',
];

// Two prelude lines, then the script from line 3: lineOffset -2 makes its lines count from 1.
const PRELUDE = 'var customvar1, customvar2, customvar3, customvar4;\n' +
  `return function serverSideScript(${REQUEST_PARAMS.join(', ')}) { var disableEndElseCallbackExecute = false; ` +
  'function checkHostname(hostname) { return __svrCheckHostname(req, hostname); } ' +
  'function checkHref(destHref) { return href === destHref; }\n';
const EPILOGUE = '\n;if (!disableEndElseCallbackExecute) elseCallback();\n};';

class ScriptLoadError extends Error {
  constructor(file, message, cause) {
    super(`${file}: cannot load the server-side script: ${message}`);
    this.name = 'ScriptLoadError';
    this.file = file;
    if (cause) this.cause = cause;
  }
}

// Where the script lives for this config: in wwwroot (default) or next to svr.js.
function scriptPath(config, installDir) {
  const dir = !config.useWebRootServerSideScript ? installDir : config.wwwroot;
  return path.join(dir, SCRIPT_NAME);
}

// Reads and compiles the script. Returns null when there is no script; throws ScriptLoadError
// when it cannot be read or does not compile. The result is a function taking the 22 request
// parameters in SVR.JS's order.
//   dirname: the script's __dirname, SVR.JS's temp/ (the state directory's temp/): relative
//     require() and `__dirname + "/../x"` resolve from there, as in SVR.JS;
//   fallbackDir: where a package (a bare require('name')) not found from dirname is looked for
//     next: the script's own directory, so a web root's node_modules keeps working.
function compileServerSideScript(file, { dirname = path.dirname(file), fallbackDir = path.dirname(file) } = {}) {
  const factory = compileScriptFactory(file);
  if (factory === null) return null;
  const filename = path.join(dirname, SCRIPT_NAME);
  const { createRequire } = require('node:module');
  const scriptRequire = layeredRequire(createRequire(filename), createRequire(path.join(fallbackDir, SCRIPT_NAME)));
  const module = { exports: {}, filename, id: filename, require: scriptRequire };
  try {
    return factory(
      scriptRequire, module, module.exports, filename, dirname,
      require('node:os'), require('node:http'), require('node:https'), require('node:url'),
      fs, path, require('node:crypto'), require('node:stream'), require('node:readline'),
      filterHeaders, hostMatches,
    );
  } catch (error) {
    throw new ScriptLoadError(file, `${error.name}: ${error.message}`, error);
  }
}

// The script read and compiled, none of it run: the factory, or null when there is no script.
// Throws ScriptLoadError (a syntax error names the file and the line). `svr check` and the
// primary call this alone; a worker then calls the factory (compileServerSideScript).
function compileScriptFactory(file) {
  let text;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    if (error.code === 'ENOENT') return null;
    throw new ScriptLoadError(file, error.code || error.message, error);
  }
  text = text.replace(/^\uFEFF/, '').replace(/^#!.*/, '');
  try {
    return require('node:vm').compileFunction(PRELUDE + text + EPILOGUE, MODULE_PARAMS, { filename: file, lineOffset: -2 });
  } catch (error) {
    throw new ScriptLoadError(file, describeSyntaxError(error, file, text), error);
  }
}

// require() from `first`; a package name it cannot find is looked for from `second`.
function layeredRequire(first, second) {
  const isPackageName = (id) => typeof id === 'string' && !id.startsWith('.') && !path.isAbsolute(id);
  const notFound = (error) => error && error.code === 'MODULE_NOT_FOUND';
  const scriptRequire = function require(id) {
    try {
      return first(id);
    } catch (error) {
      if (!isPackageName(id) || !notFound(error)) throw error;
      return second(id);
    }
  };
  scriptRequire.resolve = function resolve(id, options) {
    try {
      return first.resolve(id, options);
    } catch (error) {
      if (!isPackageName(id) || !notFound(error)) throw error;
      return second.resolve(id, options);
    }
  };
  scriptRequire.resolve.paths = first.resolve.paths;
  scriptRequire.cache = first.cache;
  scriptRequire.main = first.main;
  return scriptRequire;
}

// "Unexpected token '}'" plus where: V8 puts "file:line" on the first line of the stack. A line
// past the script's last (an unclosed brace: the error is found in the code svr wraps it in) is
// "at the end of FILE:N", N its last line.
function describeSyntaxError(error, file, text) {
  const where = typeof error.stack === 'string' ? error.stack.split('\n')[0] : '';
  const line = /:(\d+)$/.exec(where);
  if (!line) return `${error.name}: ${error.message}`;
  const lastLine = text.replace(/\n$/, '').split('\n').length;
  const at = Number(line[1]) > lastLine ? `the end of ${file}:${lastLine}` : where;
  return `${error.name}: ${error.message} (at ${at})`;
}

// ---- SVR.JS's utility functions, in scope for the script ----

// A copy of a header object without null/undefined values (objects deep-copied).
function filterHeaders(headers) {
  const result = {};
  for (const [name, value] of Object.entries(headers || {})) {
    if (value === null || value === undefined) continue;
    result[name] = typeof value === 'object' ? JSON.parse(JSON.stringify(value)) : value;
  }
  return result;
}

module.exports = {
  compileServerSideScript, compileScriptFactory, scriptPath, ScriptLoadError, SCRIPT_NAME,
  filterHeaders,
};
