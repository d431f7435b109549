'use strict';

// Loads svr-config.json: read, parse, validate against config/svr-config.schema.json (which also
// supplies every default), check what a schema cannot express, resolve paths. Every problem is
// reported at once as "FILE: key.path: expected X, found Y" so a user can fix them in one pass.
// The config file is only ever read, never written.

const fs = require('fs');
const path = require('path');
const schema = require('../../config/svr-config.schema.json');
const { describeJsonSyntaxError } = require('./json-error');
const svrjsKeys = require('./svrjs-keys');
const { urlRulesBeforeProxy } = require('./url-rules');
const { spoofableRateLimits } = require('./spoofable-rate-limits');
const { parseListenAddress } = require('./listen-address');

const { DEFAULT_CONFIG_FILE, stateDirectory } = require('../product');
const { sensitiveFiles } = require('./sensitive-files');
const { workerCount } = require('./worker-count');
const { gatewayHints } = require('./svrjs-gateways');
const { closestKey } = require('./did-you-mean');

// Keys holding file-system paths, resolved against the config file's directory.
// (errorPages[].path and page404 stay relative to wwwroot, as in SVR.JS.)
const PATH_KEYS = ['wwwroot', 'cert', 'key', 'modsDirectory', 'stateDirectory', 'accessLog', 'errorLog'];

// SVR.JS writes regular expressions as "/pattern/flags" strings. The greedy (.*) makes the last "/"
// end the pattern, so "/a/b/" is the pattern "a/b": everything SVR.JS accepts (it demands "\/"
// inside patterns) means the same here.
const { REGEX_LITERAL, compileRegexString, shortJson } = require('./regex-string');
const { regexReason } = require('./formats');

// The schema's validator, generated ahead of time by scripts/config-validator.js (ajv's standalone
// code): a start or `svr --check` never requires ajv nor compiles the schema (that cost ~100 ms of
// the primary's CPU per start, measured). Required on first use, so that a process that only needs
// a helper from here does not load it.
let compiled = null;
function validate(config) {
  if (compiled === null) compiled = require('./validate-schema');
  const ok = compiled(config);
  validate.errors = compiled.errors;
  return ok;
}

function loadConfig(file, { extraValidators = {} } = {}) {
  const configFile = path.resolve(file);
  const read = readConfigText(configFile);
  if (read.error) return failure(configFile, [`${file}: cannot read the config file: ${read.error}`]);

  const parsed = parseJson(read.text);
  if (parsed.error) {
    const { line, column, message, excerpt } = parsed.error;
    return failure(configFile, [`${file}:${line}:${column}: JSON syntax error: ${message}\n${excerpt}`]);
  }

  return checkConfig(parsed.value, { file, configFile, extraValidators });
}

// A parsed config object, validated and completed as loadConfig does (schema defaults applied,
// paths resolved against the config file's directory). The object is changed in place.
// warnings: SVR.JS keys accepted without their effect, `url` access rules in front of a proxy
// rule (url-rules.js), and rate limits by an address anyone may spoof (spoofable-rate-limits.js),
// one line each ("FILE: key: why").
// configFile null: a config made from the command line (svr serve), with paths relative to baseDir.
function checkConfig(config, { file, configFile = path.resolve(file), baseDir = path.dirname(configFile), extraValidators = {} }) {
  const givenKeys = isPlainObject(config) ? Object.keys(config) : []; // before defaults fill it in
  const problems = schemaProblems(config, extraValidators);
  let warnings = [];
  if (isPlainObject(config)) {
    const svrjs = svrjsKeys.review(config, schema, givenKeys);
    if (svrjs.problems.some((problem) => problem.key === 'wwwroot')) { // its SVR.JS hint says more
      problems.splice(0, problems.length, ...problems.filter((problem) => problem.key !== 'wwwroot'));
    }
    problems.push(...svrjs.problems);
    warnings = [...svrjs.warnings, ...unservedMetrics(config), ...urlRulesBeforeProxy(config), ...spoofableRateLimits(config)].map((problem) => formatProblem(file, problem));
    const svrjsDefaults = svrjsKeys.applySvrjsDefaults(config, schema, givenKeys);
    if (svrjsDefaults) warnings.push(formatProblem(file, svrjsDefaults));
    if (isPlainObject(config.acme)) config.secure = true; // ACME is HTTPS (acme/review.js checks the rest at start)
    problems.push(...semanticProblems(config, baseDir, configFile));
    svrjsKeys.applyAliases(config);
    resolvePaths(config, baseDir);
    // SVR.JS's gateway mods kept their settings in files beside its config (or in the state
    // directory, where svr moves legacy mods' files): each found says which svr key does the same.
    const hints = gatewayHints([baseDir, stateDirectory(config)], givenKeys);
    warnings.push(...hints.map(({ key, message }) => `${key}: ${message}`));
    warnings.push(...[...missingFastcgiSockets(config), ...missingInterpreters(config)].map((problem) => formatProblem(file, problem)));
  }
  const errors = inFileOrder(problems, config).map((problem) => formatProblem(file, problem));
  return errors.length ? failure(configFile, errors, warnings) : { config, errors, warnings, configFile };
}

// Metrics counted but answered nowhere: neither a port of their own nor onSitePort.
function unservedMetrics(config) {
  const { metrics } = config;
  if (!isPlainObject(metrics) || metrics.onSitePort === true) return [];
  if (metrics.port !== null && metrics.port !== undefined) return [];
  return [{ key: 'metrics', message: 'counted but served nowhere: set metrics.port (a listener of its own) or metrics.onSitePort: true (the site\'s listeners)' }];
}

// An invalid config is never handed out, so nobody can start a server from half of it.
function failure(configFile, errors, warnings = []) {
  return { config: null, errors, warnings, configFile };
}

function readConfigText(file) {
  try {
    return { text: fs.readFileSync(file, 'utf8') };
  } catch (error) {
    return { error: osReason(error) };
  }
}

function parseJson(text) {
  const withoutBom = text.replace(/^\uFEFF/, ''); // editors on Windows like to add one
  try {
    return { value: JSON.parse(withoutBom) };
  } catch (error) {
    return { error: describeJsonSyntaxError(withoutBom, error) };
  }
}

// ---- schema validation -> problems { key, message } ----

function schemaProblems(config, extraValidators) {
  if (validate(config)) return [];
  const problems = [];
  const seenValuePaths = new Set(); // one "expected X, found Y" per key, however many rules failed
  // A value that fits none of an anyOf's forms: say what the anyOf accepts, not what its first form does.
  const anyOfPaths = new Set(validate.errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  for (const error of validate.errors) {
    if (error.keyword !== 'anyOf' && anyOfPaths.has(error.instancePath) && error.schemaPath.includes('/anyOf/')) continue;
    const problem = problemFromAjvError(error, config, extraValidators);
    if (!problem) continue;
    if (problem.isValueProblem) {
      if (seenValuePaths.has(problem.key)) continue;
      seenValuePaths.add(problem.key);
    }
    problems.push(problem);
  }
  return problems;
}

function problemFromAjvError(error, config, extraValidators) {
  const at = pointerSegments(error.instancePath);
  if (error.keyword === 'propertyNames') return null; // its inner error names the bad key
  if (error.propertyName !== undefined) return badKeyNameProblem(error, at, config);
  if (error.keyword === 'additionalProperties') return unknownKeyProblem(error, at, config, extraValidators);
  if (error.keyword === 'required') return missingKeyProblem(error, at, config);
  return valueProblem(error, at, config);
}

function valueProblem(error, at, config) {
  const found = `${shortJson(error.data)}${regexDetail(error)}${listenDetail(error)}`;
  return {
    key: keyPath(at, config),
    message: `expected ${expectation(error.parentSchema)}, found ${found}`,
    isValueProblem: true,
  };
}

// A port/sport string that is no listen address: say which part is wrong.
function listenDetail(error) {
  if (error.keyword !== 'anyOf' || !error.parentSchema || error.parentSchema.anyOf.every((s) => s.format !== 'svr-listen')) return '';
  const { error: reason } = parseListenAddress(error.data);
  return reason && typeof error.data === 'string' && !reason.startsWith('expected') ? ` (${reason})` : '';
}

// A string shaped like "/.../" that fails to compile: add V8's reason (bad group, bad flag, ...).
function regexDetail(error) {
  const isBadRegex = error.keyword === 'format' && REGEX_LITERAL.test(error.data);
  return isBadRegex ? ` (${regexReason(error.data)})` : '';
}

// Why a required top-level key has no default, said where it is missing.
const MISSING_HINTS = {
  wwwroot: 'the directory to serve, relative to the config file (e.g. "web"). There is no default, so that ' +
    'the config file\'s own directory (keys, certificates, backups) is never served by accident',
};

function missingKeyProblem(error, at, config) {
  const name = error.params.missingProperty;
  const hint = at.length === 0 && MISSING_HINTS[name];
  const expected = hint || expectation(error.parentSchema.properties[name]);
  return { key: keyPath([...at, name], config), message: `missing (required): expected ${expected}` };
}

function badKeyNameProblem(error, at, config) {
  return {
    key: keyPath([...at, error.propertyName], config),
    message: `invalid key name: expected ${expectation(error.parentSchema)}`,
  };
}

function unknownKeyProblem(error, at, config, extraValidators) {
  const name = error.params.additionalProperty;
  const key = keyPath([...at, name], config);
  const declaredByMod = at.length === 0 && Object.hasOwn(extraValidators, name);
  if (declaredByMod) return modKeyProblem(key, config[name], extraValidators[name]);

  const allowed = Object.keys(error.parentSchema.properties || {});
  if (at.length === 0) allowed.push(...Object.keys(extraValidators));
  return { key, message: `unknown key${unknownKeyHint(name, allowed)}` };
}

function unknownKeyHint(name, allowed) {
  const suggestion = closestKey(name, allowed);
  if (suggestion) return `; did you mean "${suggestion}"?`;
  // A short list is a better hint than nothing; the top level's 50 keys are not.
  if (allowed.length > 0 && allowed.length <= 8) return ` (allowed here: ${allowed.map(quote).join(', ')})`;
  return '';
}

// A mod may declare top-level keys of its own with a predicate for their value.
function modKeyProblem(key, value, isValid) {
  let verdict;
  try {
    verdict = isValid(value);
  } catch (error) {
    return { key, message: `invalid value ${shortJson(value)}: the mod's validator failed: ${error.message}` };
  }
  if (verdict) return null;
  return { key, message: `invalid value ${shortJson(value)} (rejected by the mod that declares this key)` };
}

// ---- what the schema cannot say ----

function semanticProblems(config, baseDir, configFile) {
  const hosts = (Array.isArray(config.wwwrootVHost) ? config.wwwrootVHost : [])
    .map((host, i) => (isPlainObject(host) ? { host, key: `wwwrootVHost[${i}].wwwroot` } : null)).filter(Boolean);
  const rootProblems = [{ host: config, key: 'wwwroot' }, ...hosts].map(({ host, key }) => {
    const problem = wwwrootProblem(host, baseDir, key);
    return problem || sensitiveFilesProblem(config, host.wwwroot, key, baseDir, configFile);
  });
  return [...rootProblems, timeoutProblem(config), ...svrjsKeys.accessProblems(config), proxyProtocolProblem(config), ...cgiRuleProblems(config)].filter(Boolean);
}

// A web root that holds the config file, a TLS key or certificate, or the state directory publishes
// them at the first careless step: refused unless the operator says so.
// (The pipeline never serves them either way: site.js protects them.)
function sensitiveFilesProblem(config, wwwroot, key, baseDir, configFile) {
  if (typeof wwwroot !== 'string' || config.allowSensitiveFilesInWebRoot === true) return null;
  const state = config.stateDirectory ? path.resolve(baseDir, config.stateDirectory) : stateDirectory({});
  const root = path.resolve(baseDir, wwwroot);
  const found = sensitiveFiles(root, {
    configFile,
    tlsFiles: tlsFiles(config).map((file) => path.resolve(baseDir, file)),
    stateDirectory: config.secure === true || fs.existsSync(state) ? state : null,
  });
  if (found.length === 0) return null;
  const list = found.map(({ what, file }) => `${what} ${path.relative(fs.realpathSync(root), file) || '.'}`);
  return {
    key,
    message: `${JSON.stringify(wwwroot)} contains ${list.join(', ')}: anyone could download ${found.length === 1 ? 'it' : 'them'}. ` +
      'Point wwwroot at a directory of its own (e.g. "web"), move them out, ' +
      'or set "allowSensitiveFilesInWebRoot": true (they are still never served)',
  };
}

// Every TLS file a config names: cert, key and each sni pair's.
function tlsFiles(config) {
  const files = [config.cert, config.key];
  if (isPlainObject(config.sni)) {
    for (const pair of Object.values(config.sni)) if (isPlainObject(pair)) files.push(pair.cert, pair.key);
  }
  return files.filter((file) => typeof file === 'string' && file !== '');
}

function wwwrootProblem(config, baseDir, key = 'wwwroot') {
  if (typeof config.wwwroot !== 'string') return null; // the schema already reported it
  const resolved = path.resolve(baseDir, config.wwwroot);
  let reason;
  try {
    if (!fs.statSync(resolved).isDirectory()) reason = 'not a directory';
  } catch (error) {
    reason = osReason(error);
  }
  if (!reason) return null;
  const shown = JSON.stringify(config.wwwroot);
  const found = resolved === config.wwwroot ? shown : `${shown} (${resolved})`;
  return { key, message: `expected an existing directory, found ${found}: ${reason}` };
}

// Node refuses to create a server whose headersTimeout exceeds a non-zero requestTimeout;
// saying so here beats a worker crash at start-up.
function timeoutProblem({ headersTimeout, requestTimeout }) {
  if (!Number.isInteger(headersTimeout) || !Number.isInteger(requestTimeout)) return null;
  if (requestTimeout === 0 || headersTimeout <= requestTimeout) return null;
  return {
    key: 'headersTimeout',
    message: `expected an integer <= requestTimeout (${requestTimeout}), found ${headersTimeout}`,
  };
}

// A PROXY protocol header is believed only from trustedProxies: with none, nobody could connect.
function proxyProtocolProblem({ acceptProxyProtocol, trustedProxies }) {
  const wanted = acceptProxyProtocol === true || (isPlainObject(acceptProxyProtocol) && Object.values(acceptProxyProtocol).includes(true));
  if (!wanted || !Array.isArray(trustedProxies) || trustedProxies.length > 0) return null;
  return { key: 'acceptProxyProtocol', message: 'needs trustedProxies: the addresses of the load balancers allowed to send the PROXY header' };
}

// A PHP-FPM socket that is not there yet is no error (PHP-FPM may start after svr), but the
// likeliest reason for the 502s that follow: said once, at the check and at start.
function missingFastcgiSockets({ fastcgi }) {
  if (!Array.isArray(fastcgi)) return [];
  return fastcgi.flatMap((rule, i) => {
    const socket = isPlainObject(rule) && typeof rule.upstream === 'string' && rule.upstream.startsWith('unix:/') ? rule.upstream.slice(5) : null;
    if (socket === null || fs.existsSync(socket)) return [];
    return [{ key: `fastcgi[${i}].upstream`, message: `${socket} does not exist (yet): its requests get 502 until PHP-FPM listens there (Debian: apt install php-fpm; systemctl status php8.2-fpm)` }];
  });
}

// A CGI interpreter named by its path that is not there: every script of the rule would get 502.
function missingInterpreters({ cgi }) {
  if (!Array.isArray(cgi)) return [];
  return cgi.flatMap((rule, i) => {
    const program = isPlainObject(rule) && Array.isArray(rule.interpreter) ? rule.interpreter[0] : null;
    if (typeof program !== 'string' || !program.startsWith('/') || fs.existsSync(program)) return [];
    return [{ key: `cgi[${i}].interpreter`, message: `${program} does not exist: the rule's scripts get 502 until it is installed` }];
  });
}

// A cgi rule needs a script directory or extensions: with neither it would run nothing.
function cgiRuleProblems({ cgi }) {
  if (!Array.isArray(cgi)) return [];
  return cgi.map((rule, i) => {
    if (!isPlainObject(rule) || rule.path !== undefined || (Array.isArray(rule.extensions) && rule.extensions.length > 0)) return null;
    return { key: `cgi[${i}]`, message: 'expected "path" (a script directory such as "/cgi-bin/") or "extensions" (such as [".cgi"]): this rule would run nothing' };
  });
}

function resolvePaths(config, baseDir) {
  const resolveIn = (object, key) => {
    if (typeof object[key] === 'string') object[key] = path.resolve(baseDir, object[key]);
  };
  for (const key of PATH_KEYS) resolveIn(config, key);
  for (const key of ['port', 'sport']) {
    if (parseListenAddress(config[key]).path !== undefined) resolveIn(config, key); // a Unix socket
  }
  for (const host of Array.isArray(config.wwwrootVHost) ? config.wwwrootVHost : []) {
    if (isPlainObject(host)) resolveIn(host, 'wwwroot');
  }
  if (!isPlainObject(config.sni)) return;
  for (const pair of Object.values(config.sni)) {
    if (!isPlainObject(pair)) continue;
    resolveIn(pair, 'cert');
    resolveIn(pair, 'key');
  }
}

// ---- wording ----

const TYPE_WORDS = {
  boolean: 'true or false',
  null: 'null',
  object: 'an object',
  array: 'an array',
  string: 'a string',
  number: 'a number',
  integer: 'an integer',
};

// Human wording of what a (sub)schema accepts, e.g. "an integer from 0 to 65535".
function expectation(subschema) {
  const s = withRefResolved(subschema);
  if (!s) return 'nothing (this key does not exist)';
  if (s['x-expected']) return s['x-expected'];
  if (s.enum) return `one of ${s.enum.map((v) => JSON.stringify(v)).join(', ')}`;
  if (s.type === undefined) return 'a value';
  return [].concat(s.type).map((type) => describeType(type, s)).join(' or ');
}

function describeType(type, s) {
  if (type === 'integer' || type === 'number') return TYPE_WORDS[type] + describeRange(s);
  if (type === 'string' && s.minLength) return 'a non-empty string';
  return TYPE_WORDS[type];
}

function describeRange({ minimum, maximum }) {
  if (minimum !== undefined && maximum !== undefined) return ` from ${minimum} to ${maximum}`;
  if (minimum !== undefined) return ` >= ${minimum}`;
  if (maximum !== undefined) return ` <= ${maximum}`;
  return '';
}

// {"$ref": "#/$defs/port", "default": 80} -> the port definition with the local keywords on top.
function withRefResolved(subschema) {
  if (!subschema || typeof subschema.$ref !== 'string') return subschema;
  const target = subschema.$ref
    .replace(/^#\//, '')
    .split('/')
    .reduce((node, segment) => node && node[segment], schema);
  return { ...withRefResolved(target), ...subschema };
}

function formatProblem(file, { key, message }) {
  return key ? `${file}: ${key}: ${message}` : `${file}: ${message}`;
}

// Report problems in the order their top-level keys appear in the file, not the schema's order.
function inFileOrder(problems, config) {
  if (!isPlainObject(config)) return problems;
  const tops = Object.keys(config).map((name) => keyPath([name], config));
  const isUnder = (key, top) => key === top || key.startsWith(`${top}.`) || key.startsWith(`${top}[`);
  const rank = ({ key }) => (key ? tops.findIndex((top) => isUnder(key, top)) : -1);
  return problems
    .map((problem, index) => ({ problem, index }))
    .sort((a, b) => rank(a.problem) - rank(b.problem) || a.index - b.index)
    .map(({ problem }) => problem);
}

// ["rewriteMap", "0", "definingRegex"] -> 'rewriteMap[0].definingRegex'; keys that are not
// identifiers are quoted: customHeaders["X-Frame-Options"].
function keyPath(segments, root) {
  let text = '';
  let node = root;
  for (const segment of segments) {
    if (Array.isArray(node)) text += `[${segment}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(segment)) text += text ? `.${segment}` : segment;
    else text += `[${JSON.stringify(segment)}]`;
    node = node === null || node === undefined ? undefined : node[segment];
  }
  return text;
}

function pointerSegments(pointer) {
  if (!pointer) return [];
  return pointer.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}


function quote(name) {
  return `"${name}"`;
}

// "ENOENT: no such file or directory, open '/x'" -> "no such file or directory"
function osReason(error) {
  const match = /^[A-Z]+: (.*?), \w+/.exec(error.message);
  return match ? match[1] : error.message;
}

function isPlainObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ---- helpers for the rest of the server ----

module.exports = { loadConfig, checkConfig, compileRegexString, workerCount, DEFAULT_CONFIG_FILE };
