'use strict';
// The per-config facts every stage reads, computed once when a worker builds its pipeline (and
// again on a reload), never per request:
//
//   site.config         the validated config (paths absolute, schema defaults applied)
//   site.root           the web root's real path (a root that is not a readable directory is refused here)
//   site.webRoot        opening files below the root so that what is served is checked on the
//                       opened descriptor (web-root.js): flags, isAt, openSync, readContained
//   site.configFile     the config file this came from
//   site.log            { info, warn, error }
//   site.serverName     how the server names itself in page footers (version only with exposeServerVersion)
//   site.headers        { fixed: [[name, value]], withPath: [[name, value]] }: Server and customHeaders,
//                       split into the ones sent as they are and the ones with SVR.JS's `{path}`
//   site.protectedPaths real paths never served whatever the web root is: the config file, the TLS
//                       files (cert, key, sni), the mods and state directories, editor and backup
//                       copies of them (config/sensitive-files.js), svr's own code when the root
//                       contains it, and an old SVR.JS install's config.json (always) and its
//                       code, modules, logs and temp files (unless disableServerSideScriptExpose
//                       is false)
//   site.authenticate   null, or authenticate(req) -> Promise<{ user, throttled, retryAfter }>:
//                       Basic credentials checked against `users` (credentials.js), successes
//                       remembered, failures throttled per client address; shared by every stage
//                       that asks (a throttled answer has user null and retryAfter in seconds)
//   site.sendError      set by the pipeline once the error pages are built (stage 6)
//   site.hostHeaders    [{ matches(req), fixed, withPath }]: customHeadersVHost, first match wins
//   site.rootFor        set by virtual-hosts.js when there are per-host roots: req -> its root
//   site.shared         {} kept by every virtual host's copy of the site: what a worker has once
//                       whatever the number of roots (the static stage's file cache)
//   site.headFoot       { head, foot } (Buffers, empty when absent): the root's .head (else
//                       head.html) and .foot (else foot.html), read once; the static stage wraps
//                       .html pages in them (enableIncludingHeadAndFootInHTML), scripts get them as
//                       res.head / res.foot
//
// Virtual hosts (SVR.JS 4.4+): hostSite(site, overrides) is the same site with another web root
// and/or listing switch; virtual-hosts.js builds one per combination at load.

const fs = require('node:fs');
const path = require('node:path');
const { serverString, INSTALL_DIR, stateDirectory, modsDirectory } = require('../product');
const { createAuthenticator } = require('./credentials');
const { createWebRoot } = require('./web-root');
const { backupCopies, isSvrjsInstall, realOrSelf } = require('../config/sensitive-files');
const { compileHostPattern } = require('../http/host');
const { compileAddressList } = require('../http/address-list');

const noopLog = { info() {}, warn() {}, error() {} };
// svr's own code, hidden when the web root is the installation directory (or above it).
const OWN_FILES = ['svr.js', 'lib', 'node_modules', 'config', 'package.json', 'package-lock.json'];

function createSite(config, { log = noopLog, configFile } = {}) {
  const root = realRoot(config.wwwroot);
  const webRoot = createWebRoot(root, { followSymlinks: config.followSymlinks, log });
  return {
    config,
    root,
    webRoot,
    headFoot: readHeadFoot(root, webRoot),
    configFile,
    log,
    serverName: serverString(config.exposeServerVersion),
    headers: compileHeaders(config, serverString(config.exposeServerVersion)),
    protectedPaths: protectedPaths(config, configFile, root),
    authenticate: createAuthenticator(config.users, {
      maxAuthFailures: config.maxAuthFailures, authFailureWindow: config.authFailureWindow, log,
    }),
    sendError: null,
    shared: {},
    hostHeaders: compileVirtualHosts(config.customHeadersVHost).map(({ matches, entry }) => ({
      matches, ...compileHeaders({ customHeaders: entry.headers }, null),
    })),
  };
}

// The same site for one virtual host: its own root (and what hides inside it), its own
// listing switch. Everything else is shared.
function hostSite(site, { wwwroot, enableDirectoryListing }) {
  const config = { ...site.config, wwwroot, enableDirectoryListing };
  const root = realRoot(wwwroot);
  const webRoot = createWebRoot(root, { followSymlinks: config.followSymlinks });
  return {
    ...site, config, root, sendError: null, webRoot,
    headFoot: readHeadFoot(root, webRoot),
    protectedPaths: protectedPaths(config, site.configFile, root),
  };
}

// .head / head.html and .foot / foot.html in the web root, from a descriptor checked to lie where
// the web root's symlink rule allows (web-root.js).
function readHeadFoot(root, webRoot) {
  return { head: readFirst(root, webRoot, ['.head', 'head.html']), foot: readFirst(root, webRoot, ['.foot', 'foot.html']) };
}

function readFirst(root, webRoot, names) {
  for (const name of names) {
    try {
      return webRoot.readContained(path.join(root, name), Infinity, null);
    } catch { /* absent or refused: try the next one */ }
  }
  return Buffer.alloc(0);
}

// SVR.JS's per-host lists ([{ host?, ip?, ...}]): host as http/host.js, ip the local address the
// connection came in on. Returns [{ matches(req), entry }]; the caller takes the first match.
function compileVirtualHosts(list) {
  return (list || []).map((entry) => {
    const host = compileHostPattern(entry.host);
    const local = entry.ip ? compileAddressList([entry.ip], 'ip') : null;
    const matches = (req) => (host === null || host(req)) && (local === null || local.has(req.socket && req.socket.localAddress));
    return { matches, entry };
  });
}

function firstMatch(rules, req) {
  for (let i = 0; i < rules.length; i++) if (rules[i].matches(req)) return i;
  return -1;
}

function realRoot(wwwroot) {
  try {
    const real = fs.realpathSync(wwwroot);
    if (!fs.statSync(real).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    return real;
  } catch (err) {
    const e = new Error(`wwwroot: ${wwwroot} is not a readable directory (${err.code || err.message})`);
    e.code = 'EBADWWWROOT';
    throw e;
  }
}

// Server first (customHeaders may override it, as SVR.JS allows), then customHeaders in order.
// serverName null: only the given headers (a virtual host's, set over the site's).
function compileHeaders(config, serverName) {
  const fixed = serverName === null ? [] : [['Server', serverName]];
  const withPath = [];
  for (const [name, value] of Object.entries(config.customHeaders || {})) {
    const text = String(value);
    if (serverName !== null && name.toLowerCase() === 'server') fixed[0] = ['Server', text];
    else if (text.includes('{path}')) withPath.push([name, text]);
    else fixed.push([name, text]);
  }
  return { fixed, withPath };
}

// SVR.JS's `{path}` placeholder, filled with the request's URL.
function fillPath(value, url) {
  return value.split('{path}').join(url);
}

// Every configured header with `{path}` filled for `url` (what scripts' getCustomHeaders() returns).
function headersFor(site, url) {
  const out = {};
  for (const [name, value] of site.headers.fixed) out[name] = value;
  for (const [name, value] of site.headers.withPath) out[name] = fillPath(value, url);
  return out;
}

function tlsFiles(config) {
  const files = [config.cert, config.key];
  for (const pair of Object.values(config.sni || {})) if (pair) files.push(pair.cert, pair.key);
  return files;
}

function protectedPaths(config, configFile, root) {
  const secrets = [configFile, ...tlsFiles(config), stateDirectory(config)]
    .filter((p) => typeof p === 'string' && p !== '').map(realOrSelf);
  // An old SVR.JS install directory as the web root: its config.json holds password hashes, so it
  // (and its backup copies) is never served, even with disableServerSideScriptExpose false, which
  // governs the rest of SVR.JS's files (svrjsInstallPaths below).
  if (isSvrjsInstall(root)) secrets.push(path.join(root, 'config.json'));
  const paths = [...secrets, ...secrets.flatMap(backupCopies), realOrSelf(modsDirectory(config))];
  // A web root that itself lies inside one of svr's own directories is the admin's explicit choice.
  for (const name of OWN_FILES) {
    const p = realOrSelf(path.join(INSTALL_DIR, name));
    if (root !== p && !root.startsWith(p + path.sep)) paths.push(p);
  }
  return paths.concat(svrjsInstallPaths(config, root));
}

// A web root that is an old SVR.JS installation (SVR.JS's "portable" layout: svr.js and its
// config.json beside the site) holds SVR.JS's config with password hashes, its modules, mods, logs
// and temporary files. SVR.JS hid them with disableServerSideScriptExpose (default true); so does svr.
const SVRJS_FILES = ['config.json', 'svr.js', 'svr.compressed', 'modloader', 'node_modules', 'mods', 'temp',
  'log', 'cert', 'svrpasswd.js', 'logviewer.js', 'loghighlight.js', 'svr_new.js', 'svrjs.json'];

function svrjsInstallPaths(config, root) {
  if (!config.disableServerSideScriptExpose) return [];
  return isSvrjsInstall(root) ? SVRJS_FILES.map((name) => path.join(root, name)) : [];
}

module.exports = { createSite, fillPath, headersFor, hostSite, compileVirtualHosts, firstMatch };
