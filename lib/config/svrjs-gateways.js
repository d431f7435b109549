'use strict';
// SVR.JS ran PHP and CGI through gateway mods configured in files of their own beside its
// config.json (or, moved with the legacy mods, in svr's state directory): GreenRhombus (FastCGI),
// RedBrick (CGI, PHP-CGI) and OrangeCircle (SCGI). svr reads none of them: its own `fastcgi` and
// `cgi` keys do the same. This turns each such file into a warning that shows the key to write.
//
//   gatewayHints(directories, givenKeys) -> [{ key: file name, message }]
//     directories: where to look (the config file's directory, the state directory);
//     givenKeys: the config's own keys (a hint is left out once its svr key is there).

const fs = require('node:fs');
const path = require('node:path');

// RedBrick's interpreters for extensions outside cgi-bin when redbrick-interpreters.json says none.
const REDBRICK_DEFAULTS = { '.pl': ['perl'], '.py': ['python'], '.sh': ['bash'], '.ksh': ['ksh'], '.csh': ['csh'], '.rb': ['ruby'], '.php': ['php-cgi'] };

function readJson(file) {
  try {
    return { value: JSON.parse(fs.readFileSync(file, 'utf8')) };
  } catch (error) {
    return error.code === 'ENOENT' ? null : { error: error.message };
  }
}

const show = (value) => JSON.stringify(value);

// One GreenRhombus server entry -> a fastcgi rule.
function fastcgiRule(entry, extensions, host) {
  const rule = {
    upstream: entry.socketPath ? `unix:${entry.socketPath}` : `${entry.host || 'localhost'}:${entry.port || 9000}`,
  };
  if (entry.path) rule.path = entry.path.endsWith('/') ? entry.path : `${entry.path}/`;
  if (host) rule.host = host;
  if (extensions && show(extensions) !== show(['.php'])) rule.extensions = extensions;
  return rule;
}

function greenRhombus(config, extensions) {
  if (config && typeof config.multiConfig === 'object' && config.multiConfig !== null) {
    return Object.entries(config.multiConfig).map(([host, entry]) => fastcgiRule(entry || {}, extensions, host));
  }
  return [fastcgiRule(config || {}, extensions, null)];
}

function redBrick(extensions, interpreters) {
  const rules = [{ path: '/cgi-bin/' }];
  const byInterpreter = new Map();
  for (const ext of Array.isArray(extensions) ? extensions : []) {
    const interpreter = interpreters && Object.hasOwn(interpreters, ext) ? interpreters[ext] : REDBRICK_DEFAULTS[ext] || null;
    const key = show(interpreter);
    if (!byInterpreter.has(key)) byInterpreter.set(key, { extensions: [], interpreter });
    byInterpreter.get(key).extensions.push(ext);
  }
  for (const rule of byInterpreter.values()) rules.push(rule.interpreter === null ? { extensions: rule.extensions } : rule);
  return rules;
}

// The two gateway mods whose files translate into an svr key: their two files, the key, the
// rules made from the files' contents, and what the hint adds after the rules.
const TRANSLATED_MODS = [
  {
    files: ['greenrhombus-config.json', 'greenrhombus-scriptexts.json'],
    key: 'fastcgi',
    rules: greenRhombus,
    says: (rules) => `GreenRhombus (SVR.JS's FastCGI mod) is configured here, and svr does not read it; the same in svr's config: "fastcgi": ${show(rules)} (svr runs script files through FastCGI, not every path under "path"; see docs/php.md)`,
  },
  {
    files: ['redbrick-scriptexts.json', 'redbrick-interpreters.json'],
    key: 'cgi',
    rules: redBrick,
    says: (rules) => `RedBrick (SVR.JS's CGI mod) is configured here, and svr does not read it; the same in svr's config: "cgi": ${show(rules)} (scripts in /cgi-bin/ must be executable; for PHP, PHP-FPM through "fastcgi" is faster; see docs/php.md)`,
  },
];

// The hint for one such mod in dir, or null when neither file is there or its key is given.
function translatedModHint(dir, mod, givenKeys) {
  const [first, second] = mod.files.map((name) => readJson(path.join(dir, name)));
  if ((!first && !second) || givenKeys.includes(mod.key)) return null;
  const unreadable = [first, second].findIndex((file) => file && file.error);
  if (unreadable !== -1) {
    const file = [first, second][unreadable];
    return { key: path.join(dir, mod.files[unreadable]), message: `cannot be read as JSON (${file.error}); svr reads no gateway mod's file either way: see docs/php.md` };
  }
  const rules = mod.rules(first && first.value, second && second.value);
  return { key: path.join(dir, mod.files[first ? 0 : 1]), message: mod.says(rules) };
}

function gatewayHints(directories, givenKeys = []) {
  const hints = [];
  for (const dir of [...new Set(directories.filter(Boolean))]) {
    for (const mod of TRANSLATED_MODS) {
      const hint = translatedModHint(dir, mod, givenKeys);
      if (hint !== null) hints.push(hint);
    }
    if (readJson(path.join(dir, 'orangecircle-config.json'))) {
      hints.push({
        key: path.join(dir, 'orangecircle-config.json'),
        message: 'OrangeCircle (SVR.JS\'s SCGI mod) is configured here; svr has no SCGI gateway: serve the application over HTTP behind "proxy", or over FastCGI behind "fastcgi" (see docs/php.md)',
      });
    }
  }
  return hints;
}

module.exports = { gatewayHints };
