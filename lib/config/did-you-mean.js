'use strict';
// "Did you mean ...?": the known name nearest to a mistyped one (config keys, command-line options).
//
//   closestKey(name, candidates) -> the nearest candidate, or null when none is near enough

// The allowed key nearest to `name` (ignoring case), if it is near enough to be a likely typo.
// The limit grows slowly with the name's length: a long name shares "enable..." with many keys, and
// a third of its letters (enableIPSpoofing -> "enableLogging") is a different word, not a typo.
function closestKey(name, candidates) {
  const limit = Math.max(2, Math.floor(name.length / 5));
  let best = null;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = keyDistance(name.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return bestDistance <= limit ? best : null;
}

// An abbreviation ("enableDirListing" for "enableDirectoryListing") counts as a near miss,
// however many letters it leaves out.
function keyDistance(name, candidate) {
  const distance = editDistance(name, candidate);
  return name.length >= 4 && isSubsequence(name, candidate) ? Math.min(distance, 2) : distance;
}

function isSubsequence(short, long) {
  let i = 0;
  for (const char of long) if (char === short[i]) i++;
  return i === short.length;
}

// Levenshtein distance where swapping two neighbours ("prot" -> "port") also costs 1.
function editDistance(a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.length][b.length];
}

module.exports = { closestKey };
