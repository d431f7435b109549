'use strict';
// Regular expressions written as "/pattern/flags" (SVR.JS's format), in one small module: the
// config loader validates with it and the rewrite engine compiles its rules with it, without a
// worker having to load the loader and ajv.

const REGEX_LITERAL = /^\/(.*)\/([A-Za-z0-9]*)$/s;

function shortJson(value) {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

// Parses "/pattern/flags"; throws for a string in another form, and V8's SyntaxError for a bad
// pattern or flags.
function compileRegexString(text) {
  const parts = typeof text === 'string' && REGEX_LITERAL.exec(text);
  if (!parts) {
    throw new Error(`${shortJson(text)} is not a regular expression written as "/pattern/flags"`);
  }
  return new RegExp(parts[1], parts[2]);
}

module.exports = { REGEX_LITERAL, compileRegexString, shortJson };
