'use strict';
// What a redirect rule may put into `Location`. A regex rule's captures can come from the decoded
// path, so they may hold a TAB, a space, a backslash or non-ASCII text. Browsers parse `Location`
// with the WHATWG URL parser, which drops TAB, CR and LF and reads "\" as "/": "/\t/evil.com" is
// "//evil.com", another host. So
//   - those characters are percent-encoded ("%" itself is kept: the raw URL's escapes stay as sent);
//   - the result must have the origin the rule's location has without its captures ("/$1": this
//     site; "https://example.com/$1": example.com), else the redirect is refused (null).
// A location whose own origin depends on a capture ("https://$1") is the config's choice: only
// encoded.

const UNSAFE = /[\x00-\x20\x7f"<>\\`{}]|[^\x00-\x7f]/gu;
const CAPTURE = /\$(?:\d{1,2}|[&`'$]|<[^>]*>)/g;
const THIS_SITE = 'http://this-site.invalid';

function originOf(location) {
  try {
    return new URL(location, `${THIS_SITE}/`).origin;
  } catch {
    return null;
  }
}

// template: the rule's `location`, read once -> safeLocation(result) -> a string, or null to refuse.
function compileLocationGuard(template) {
  const origin = originOf(String(template).replace(CAPTURE, ''));
  return function safeLocation(result) {
    let encoded;
    try {
      encoded = result.replace(UNSAFE, (character) => encodeURIComponent(character));
    } catch { // a lone surrogate cannot be encoded
      return null;
    }
    if (origin === null || origin === 'null') return encoded;
    return originOf(encoded) === origin ? encoded : null;
  };
}

module.exports = { compileLocationGuard };
