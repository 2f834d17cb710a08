// Which frames a search highlights, without ever compiling the person's text as a RegExp:
// V8's regular expressions backtrack, so a pattern like `^(.|.)*#` arriving in the
// ?search= of a shared link would hang the tab of whoever opens it. A frame matches at
// once when its name contains the text (any case); once the server answers, by the
// function ids its search matched (RE2 there, with regular expressions, bounded in time).
"use strict";

export function textMatcher(text) {
  if (!text) return null;
  const needle = text.toLowerCase();
  return {test: (node) => (node.lower ??= node.n.toLowerCase()).includes(needle)};
}

/** `search` is the server's answer: {pattern, samples, share, functions}. */
export function serverMatcher(text, search) {
  if (!text) return null;
  if (!search || search.pattern !== text || !search.functions) return textMatcher(text);
  const ids = new Set(search.functions);
  return {test: (node) => node.f >= 0 && ids.has(node.f)};
}
