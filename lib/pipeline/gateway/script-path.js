'use strict';
// Which script a URL path runs, decided with the path policy (the static files' own rules: hidden
// dotfiles, the server's own files, symbolic links, containment in the web root), so a gateway
// runs nothing the static stage would refuse to send.
//
//   findScript(pathname, rule, resolve) ->
//     { filename, scriptName, pathInfo }   run this file (a regular file inside the web root)
//     { status }                           answer with this error status
//     null                                 not a script: the next stage serves the path
//
// rule: { prefix, extensions, index, frontController, wholeDirectory } (rules.js);
// resolve(pathname) -> { status } | { real, stats }: the path policy.
//
// 1. With `extensions`: the path is split after the first segment ending in one of them
//    ("/index.php/a/b": script /index.php, PATH_INFO /a/b). Only that segment can be the script:
//    in /uploads/avatar.jpg/x.php the script would be x.php *below* avatar.jpg, which is no
//    directory, so nothing runs; avatar.jpg never does (nginx's cgi.fix_pathinfo hole). A segment
//    that is a directory (a library's folder "/vendor/lib.php/readme.txt") is no script: the
//    split goes on past it, and a path with no script segment left is not a script at all (its
//    files are static, the ".php" files in it run).
// 2. wholeDirectory (a CGI directory such as /cgi-bin/): the first path below the prefix that is
//    a regular file is the script, the rest PATH_INFO; nothing there is ever a static file.
// 3. A directory URL ending in "/" runs its first `index` file.
// 4. A path that names nothing runs `frontController` when it exists.
// A path that asked for a script that does not exist is 404, never passed on, so the static
// stage cannot be made to send a script's source.

function hasExtension(segment, extensions) {
  const lower = segment.toLowerCase();
  for (const ext of extensions) if (lower.length > ext.length && lower.endsWith(ext)) return true;
  return false;
}

function isFile(found) {
  return found.stats !== undefined && found.stats.isFile();
}

function isDirectory(found) {
  return found.stats !== undefined && found.stats.isDirectory();
}

function script(found, scriptName, pathInfo) {
  return { filename: found.real, scriptName, pathInfo };
}

function splitOnExtension(pathname, rule, resolve) {
  const segments = pathname.split('/');
  let asked = false;
  for (let i = 1; i < segments.length; i++) {
    if (!hasExtension(segments[i], rule.extensions)) continue;
    const scriptName = segments.slice(0, i + 1).join('/');
    const found = resolve(scriptName);
    if (isFile(found)) return { script: script(found, scriptName, i + 1 < segments.length ? '/' + segments.slice(i + 1).join('/') : '') };
    if (isDirectory(found)) continue; // a folder named like a script (assets.php/): what is in it was asked for
    asked = true;
    if (found.status !== undefined && found.status !== 404) return { status: found.status };
    break; // nothing there (or hidden, or no file): nothing below it either
  }
  return { asked };
}

function inDirectory(pathname, rule, resolve) {
  const rest = pathname.slice(rule.prefix.length).split('/');
  let scriptName = rule.prefix.replace(/\/$/, '');
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === '') break;
    scriptName += '/' + rest[i];
    const found = resolve(scriptName);
    if (isFile(found)) return script(found, scriptName, i + 1 < rest.length ? '/' + rest.slice(i + 1).join('/') : '');
    if (found.status !== undefined) return { status: found.status };
  }
  return { status: 404 }; // the directory itself, or a directory in it: no listing, no index
}

function findScript(pathname, rule, resolve) {
  if (rule.wholeDirectory && rule.extensions.length === 0) return inDirectory(pathname, rule, resolve);
  if (rule.extensions.length) {
    const split = splitOnExtension(pathname, rule, resolve);
    if (split.script || split.status) return split.script || { status: split.status };
    if (split.asked) return frontController(rule, resolve) || { status: 404 };
  }
  const found = resolve(pathname);
  if (found.stats !== undefined) {
    if (!found.stats.isDirectory() || !pathname.endsWith('/')) return null;
    for (const name of rule.index) {
      const index = resolve(pathname + name);
      if (isFile(index)) return script(index, pathname + name, '');
    }
    return null;
  }
  if (found.status !== 404) return null; // the static stage gives the same answer
  return frontController(rule, resolve);
}

function frontController(rule, resolve) {
  if (!rule.frontController) return null;
  const found = resolve(rule.frontController);
  return isFile(found) ? script(found, rule.frontController, '') : null;
}

module.exports = { findScript, hasExtension };
