'use strict';
// SVR.JS's config keys that svr accepts without their effect, so that an SVR.JS config.json
// starts svr and means the same or says plainly where it does not.
//
// The schema marks such keys (config/svr-config.schema.json) with "x-svrjs-ignored": "why";
// present in a config, each gives one warning line "key: ... no effect: why". (A key whose absence
// would change what is served or weaken security is never marked so: it is implemented.)
//
//   review(config, schema, givenKeys)       -> { warnings: [problem], problems: [problem] }
//                                              (givenKeys: the file's own keys, before defaults)
//   accessProblems(config)                  -> [problem]  (address lists, redirect rules)
//   applyAliases(config)                    -> `domian` (SVR.JS 2.x's spelling) fills `domain`
//   applySvrjsDefaults(config, schema, givenKeys)
//                                           -> null, or a warning: an SVR.JS config gets SVR.JS's
//                                              value for each key marked "x-svrjs-default" it does
//                                              not set, and the start says so
//   isSvrjsConfig(config)                   -> whether SVR.JS wrote it (the same test)

const { compileAddressList } = require('../http/address-list');

// Keys only SVR.JS's configs have: a config with any of them (and no wwwroot) came from SVR.JS.
const SVRJS_ONLY = ['timestamp', 'nonStandardCodes', 'blacklist', 'enableIPSpoofing', 'allowStatus',
  'disableServerSideScriptExpose', 'enableRemoteLogBrowsing', 'environmentVariables',
  'disableUnusedWorkerTermination', 'optOutOfStatisticsServer', 'disableConfigurationSaving',
  'enableIncludingHeadAndFootInHTML', 'enableDirectoryListingWithDefaultHead', 'domian', 'version'];

const REDIRECT_CODES = new Set([301, 302, 307, 308]);

function review(config, schema, givenKeys) {
  const warnings = [];
  const problems = [];
  for (const key of givenKeys) {
    const spec = schema.properties[key];
    if (!spec) continue;
    if (spec['x-svrjs-ignored']) {
      warnings.push({ key, message: `accepted from SVR.JS, no effect in svr: ${spec['x-svrjs-ignored']}` });
    }
  }
  if (!givenKeys.includes('wwwroot') && SVRJS_ONLY.some((key) => givenKeys.includes(key))) problems.push(wwwrootHint());
  return { warnings, problems };
}

// SVR.JS served the directory it was installed in (its cwd); svr serves only what it is told to.
function wwwrootHint() {
  return {
    key: 'wwwroot',
    message: 'missing: this looks like an SVR.JS config, and SVR.JS served the directory it ran from. ' +
      'Add "wwwroot" with the directory to serve (relative to this config file), e.g. "wwwroot": "/var/www/svrjs"',
  };
}

function accessProblems(config) {
  const problems = [];
  const addressErrors = (list, key) => compileAddressList(list, key).errors.map(asProblem);
  if (Array.isArray(config.blacklist)) problems.push(...addressErrors(config.blacklist, 'blacklist'));
  if (Array.isArray(config.trustedProxies)) problems.push(...addressErrors(config.trustedProxies, 'trustedProxies'));
  if (!Array.isArray(config.nonStandardCodes)) return problems;
  config.nonStandardCodes.forEach((rule, i) => {
    if (rule === null || typeof rule !== 'object') return; // the schema reported it
    const at = `nonStandardCodes[${i}]`;
    if (REDIRECT_CODES.has(rule.scode) && typeof rule.location !== 'string') {
      problems.push({ key: `${at}.location`, message: `missing: a ${rule.scode} rule redirects, expected the target URL` });
    }
    if (Array.isArray(rule.users)) problems.push(...addressErrors(rule.users, `${at}.users`));
  });
  return problems;
}

// "blacklist[2]: expected ..." -> { key: "blacklist[2]", message: "expected ..." }
function asProblem(line) {
  const colon = line.indexOf(': ');
  return { key: line.slice(0, colon), message: line.slice(colon + 2) };
}

function applyAliases(config) {
  if (typeof config.domian === 'string' && config.domian !== '' && !config.domain) config.domain = config.domian;
}

// A config SVR.JS wrote: it has a key svr accepts only from SVR.JS (marked "x-svrjs-ignored";
// every config SVR.JS saved has "timestamp"). Keys svr's own users write too (blacklist,
// nonStandardCodes, ...) do not count, so that an svr config never changes behaviour by naming one.
function svrjsMarkers(schema, givenKeys) {
  return givenKeys.filter((key) => schema.properties[key] && schema.properties[key]['x-svrjs-ignored']);
}

// Whether a (parsed or loaded) config is one SVR.JS wrote: the keys that say so have no defaults,
// so a loaded config still shows them.
function isSvrjsConfig(config, schema = require('../../config/svr-config.schema.json')) {
  return config !== null && typeof config === 'object' && svrjsMarkers(schema, Object.keys(config)).length > 0;
}

// Where SVR.JS behaved otherwise by default (head and foot in every page, POST to a file served),
// an SVR.JS config that does not set the key keeps SVR.JS's behaviour.
function applySvrjsDefaults(config, schema, givenKeys) {
  const markers = svrjsMarkers(schema, givenKeys);
  if (markers.length === 0) return null;
  const applied = Object.entries(schema.properties)
    .filter(([key, spec]) => spec['x-svrjs-default'] !== undefined && !givenKeys.includes(key))
    .map(([key, spec]) => {
      config[key] = spec['x-svrjs-default'];
      return `${key} is ${JSON.stringify(spec['x-svrjs-default'])} (svr's default: ${JSON.stringify(spec.default)})`;
    });
  if (applied.length === 0) return null;
  const named = markers.slice(0, 3).map((key) => `"${key}"`).join(', ');
  return {
    key: null,
    message: `an SVR.JS config (it has ${named}${markers.length > 3 ? ', ...' : ''}): as SVR.JS did, ` +
      `${applied.join(', ')}; set ${applied.length === 1 ? 'the key' : 'the keys'} in the config to choose`,
  };
}

module.exports = { review, accessProblems, applyAliases, applySvrjsDefaults, isSvrjsConfig };
