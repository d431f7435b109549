'use strict';
// The path policy: which file or directory below a web root a URL path may name. The static stage
// calls it, and so may any stage that runs a file from the web root (a FastCGI or CGI gateway), so
// that every stage hides the same files. It never opens a file: what it accepts is opened below
// the root on a descriptor by site.webRoot (web-root.js), which catches a swap after this check.
//
// Contract, for a site (site.js; per web root with virtual hosts):
//   const policy = pathPolicyFor(site)       built once per site, shared by the stages that ask
//   policy.resolve(pathname)                 pathname: the decoded, normalised URL path
//     -> { real, rel, stats }                  the real path, relative to the root ('' = root),
//                                              and its fs.Stats (file or directory)
//     -> { status, error? }                    refused: 404 for anything hidden or missing (so
//                                              nobody learns that a hidden file exists), or the
//                                              status for an fs error (errorStatus)
//   policy.indexFile(dirPathname, names?)    the first of names (default INDEX_FILES, SVR.JS's
//     -> { real, rel, stats } | { status: 403 } | null    order) that resolve() accepts as a file
//                                              in that directory; 403 when one is unreadable
//   policy.isHidden(real) -> boolean         a real path the policy hides (listings, .br/.gz siblings)
//   errorStatus(fsError) -> status           the HTTP status for an fs error
//
// What it hides:
//   - dotfiles (a segment starting with '.', except a leading .well-known) unless allowDotfiles;
//   - serverSideScript.js and the site's protected paths (site.protectedPaths: the config, TLS
//     files, state, logs, their backup copies) are never served;
//   - followSymlinks false: no component below the web root may be a symlink (one lstat each);
//     true: symlinks are followed, but the real path must stay inside the web root.
// The file system is asked through stat-per-turn.js: once per path in a turn of the event loop, so
// a change is seen by every request handled after the turn in which it happened.
//
// Why synchronous: on a local file system these calls are answered from the kernel's dentry and
// inode caches in about a microsecond each, while an fs.promises call costs a thread-pool round
// trip and its promise; profiled on a single-threaded worker serving a 1 KiB file, the async
// realpath+stat took 30% of the main thread and the sync ones 12% (6.9k -> 9.1k req/s). nginx makes
// the same blocking calls from its event loop. The cost: on a hung network file system the worker
// blocks; the other workers go on serving.

const fs = require('node:fs');
const path = require('node:path');
const answers = require('./stat-per-turn'); // the file system's answers, once per path per turn

const SCRIPT_NAME = 'serverSideScript.js';
const INDEX_FILES = ['index.html', 'index.htm', 'index.xhtml']; // SVR.JS's order
const policies = new WeakMap(); // site -> its policy

function errorStatus(err) {
  switch (err && err.code) {
    case 'ENOENT': case 'ENOTDIR': case 'ELOOP': case 'EISDIR': case 'ENAMETOOLONG': return 404;
    case 'ENXIO': case 'ENODEV': return 404; // a socket or device swapped in after the check
    case 'EACCES': case 'EPERM': return 403;
    case 'EMFILE': case 'ENFILE': return 503;
    default: return 500;
  }
}

// The lstat of root/rel, checking that no component below root is a symlink (null if one is).
// rel: a normalised relative path with '/' separators ('' = root). Throws the fs error otherwise.
function lstatBeneath(root, rel) {
  if (rel === '') return fs.statSync(root);
  let at = root;
  let from = 0;
  for (;;) {
    const slash = rel.indexOf('/', from);
    at += path.sep + (slash === -1 ? rel.slice(from) : rel.slice(from, slash));
    const stats = fs.lstatSync(at);
    if (stats.isSymbolicLink()) return null;
    if (slash === -1) return stats;
    from = slash + 1;
  }
}

// path.basename(file) === SCRIPT_NAME, for a path without a trailing '/'.
function isScriptName(file) {
  return file.endsWith(SCRIPT_NAME) && (file.length === SCRIPT_NAME.length || file[file.length - SCRIPT_NAME.length - 1] === '/');
}

// false when no segment of rel can start with '.' (the exact test splits; this only scans).
function mayHaveDotSegment(rel) {
  return rel[0] === '.' || rel.includes('/.') || rel.includes('\\');
}

// The path without its leading and trailing slashes ('/a/b/' -> 'a/b').
function trimSlashes(pathname) {
  let start = 0;
  let end = pathname.length;
  while (start < end && pathname.charCodeAt(start) === 0x2f) start++;
  while (end > start && pathname.charCodeAt(end - 1) === 0x2f) end--;
  return start === 0 && end === pathname.length ? pathname : pathname.slice(start, end);
}

// path.join(root, rel); a rel with nothing to normalise (no '.' segment, no '//') is appended as it is.
function joinBelow(rootPrefix, root, rel) {
  return mayHaveDotSegment(rel) || rel.includes('//') ? path.join(root, rel) : rootPrefix + rel;
}

function createPathPolicy(site) {
  const root = site.root;
  const rootPrefix = root === '/' ? '/' : root + path.sep;
  const allowDotfiles = site.config.allowDotfiles;
  const followSymlinks = site.config.followSymlinks;
  // Every path checked here is the root or lies under it, so only the protected paths that are the
  // root, lie under it or contain it can match: the others (usually all of them) are dropped once
  // here instead of being compared on every request (profiled: 1.8% of a worker's time for 1 KiB).
  const within = (child, parent) => child === parent || child.startsWith(parent === '/' ? '/' : parent + path.sep);
  const protectedPaths = site.protectedPaths.filter((p) => within(p, root) || within(root, p));
  const protectedPrefixes = protectedPaths.map((p) => p + path.sep);
  // lstatBeneath by the path relative to the root: a repeated path of the turn costs one lookup
  // of a short key, no path built and no lstat.
  const lstatBelowRoot = answers.oncePerTurn((rel) => lstatBeneath(root, rel));

  function isProtected(real) {
    if (isScriptName(real)) return true;
    for (let i = 0; i < protectedPaths.length; i++) {
      if (real === protectedPaths[i] || real.startsWith(protectedPrefixes[i])) return true;
    }
    return false;
  }

  // rel: relative path (no leading '/'); true when a segment starts with '.' (but .well-known first)
  function hasDotSegment(rel) {
    if (allowDotfiles || rel === '') return false;
    if (!mayHaveDotSegment(rel)) return false; // most paths: two scans, no split
    const segs = rel.split(/[/\\]/);
    for (let i = 0; i < segs.length; i++) {
      const s = segs[i];
      if (s[0] === '.' && !(i === 0 && s === '.well-known')) return true;
    }
    return false;
  }

  function isHidden(real) {
    return isProtected(real) || hasDotSegment(path.relative(root, real));
  }

  function withoutSymlinks(lexicalRel, lexical) {
    let stats;
    try {
      stats = lstatBelowRoot(lexicalRel);
    } catch (err) {
      return { status: errorStatus(err), error: err };
    }
    if (stats === null || isProtected(lexical)) return { status: 404 }; // a symlink on the way
    return { real: lexical, rel: lexical === root ? '' : lexical.slice(rootPrefix.length), stats };
  }

  function followingSymlinks(lexical) {
    let real;
    let stats;
    try {
      real = answers.realpathSync(lexical);
      if (real !== root && !real.startsWith(rootPrefix)) return { status: 404 }; // escapes the root
      stats = answers.statSync(real);
    } catch (err) {
      return { status: errorStatus(err), error: err };
    }
    const rel = path.relative(root, real);
    if (hasDotSegment(rel) || isProtected(real)) return { status: 404 };
    return { real, rel, stats };
  }

  // pathname: the decoded, normalised URL path.
  function resolve(pathname) {
    const lexicalRel = trimSlashes(pathname);
    if (hasDotSegment(lexicalRel) || isScriptName(lexicalRel)) return { status: 404 };
    const lexical = lexicalRel === '' ? root : joinBelow(rootPrefix, root, lexicalRel);
    return followSymlinks ? followingSymlinks(lexical) : withoutSymlinks(lexicalRel, lexical);
  }

  function indexFile(dirPathname, names = INDEX_FILES) {
    const dir = dirPathname.endsWith('/') ? dirPathname : `${dirPathname}/`;
    for (const name of names) {
      const found = resolve(dir + name);
      if (found.stats && found.stats.isFile()) return found;
      if (found.status === 403) return { status: 403 };
    }
    return null;
  }

  return { resolve, indexFile, isHidden };
}

function pathPolicyFor(site) {
  let policy = policies.get(site);
  if (policy === undefined) {
    policy = createPathPolicy(site);
    policies.set(site, policy);
  }
  return policy;
}

module.exports = { pathPolicyFor, errorStatus, INDEX_FILES };
