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

function gatewayHints(directories, givenKeys = []) {
  const hints = [];
  for (const dir of [...new Set(directories.filter(Boolean))]) {
    const read = (name) => readJson(path.join(dir, name));
    const where = (name) => path.join(dir, name);
    const unreadable = (name, file) => hints.push({ key: where(name), message: `cannot be read as JSON (${file.error}); svr reads no gateway mod's file either way: see docs/php.md` });

    const green = read('greenrhombus-config.json');
    const greenExts = read('greenrhombus-scriptexts.json');
    if ((green || greenExts) && !givenKeys.includes('fastcgi')) {
      if (green && green.error) unreadable('greenrhombus-config.json', green);
      else if (greenExts && greenExts.error) unreadable('greenrhombus-scriptexts.json', greenExts);
      else {
        const rules = greenRhombus(green && green.value, greenExts && greenExts.value);
        hints.push({
          key: where(green ? 'greenrhombus-config.json' : 'greenrhombus-scriptexts.json'),
          message: `GreenRhombus (SVR.JS's FastCGI mod) is configured here, and svr does not read it; the same in svr's config: "fastcgi": ${show(rules)} (svr runs script files through FastCGI, not every path under "path"; see docs/php.md)`,
        });
      }
    }

    const redExts = read('redbrick-scriptexts.json');
    const redInterpreters = read('redbrick-interpreters.json');
    if ((redExts || redInterpreters) && !givenKeys.includes('cgi')) {
      if (redExts && redExts.error) unreadable('redbrick-scriptexts.json', redExts);
      else if (redInterpreters && redInterpreters.error) unreadable('redbrick-interpreters.json', redInterpreters);
      else {
        const rules = redBrick(redExts && redExts.value, redInterpreters && redInterpreters.value);
        hints.push({
          key: where(redExts ? 'redbrick-scriptexts.json' : 'redbrick-interpreters.json'),
          message: `RedBrick (SVR.JS's CGI mod) is configured here, and svr does not read it; the same in svr's config: "cgi": ${show(rules)} (scripts in /cgi-bin/ must be executable; for PHP, PHP-FPM through "fastcgi" is faster; see docs/php.md)`,
        });
      }
    }

    if (read('orangecircle-config.json')) {
      hints.push({
        key: where('orangecircle-config.json'),
        message: 'OrangeCircle (SVR.JS\'s SCGI mod) is configured here; svr has no SCGI gateway: serve the application over HTTP behind "proxy", or over FastCGI behind "fastcgi" (see docs/php.md)',
      });
    }
  }
  return hints;
}

module.exports = { gatewayHints };
