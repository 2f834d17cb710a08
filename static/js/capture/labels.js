// Frame labels that fit their box: the whole name, or its longest start that fits with an
// ellipsis, cut between graphemes (a letter with its accents, an emoji sequence), never
// in the middle of one as clipping the text would.
"use strict";

export const ELLIPSIS = "…";

const segmenter = typeof Intl !== "undefined" && Intl.Segmenter ?
  new Intl.Segmenter(undefined, {granularity: "grapheme"}) : null;

/** Where each grapheme of `text` ends (string indices), at most `limit` of them. */
export function graphemeEnds(text, limit = Infinity) {
  const ends = [];
  if (segmenter) {
    for (const {index, segment} of segmenter.segment(text)) {
      ends.push(index + segment.length);
      if (ends.length >= limit) break;
    }
  } else {  // code points at least: a surrogate pair is never split
    let i = 0;
    for (const ch of text) {
      i += ch.length;
      ends.push(i);
      if (ends.length >= limit) break;
    }
  }
  return ends;
}

/** `text` as it fits in `room` px by `measure(s)` (a canvas's measureText width): itself,
 * a start of it ending in "…", or "" when not even one grapheme and the ellipsis fit.
 * A binary search over the grapheme ends: a few measures, whatever the name's length. */
export function fitLabel(measure, text, room) {
  if (room <= 0 || !text) return "";
  if (measure(text) <= room) return text;
  // no more graphemes fit than the room holds at 2 px a glyph: the search stays short
  // for a 2,000-character C++ name in a narrow frame
  const ends = graphemeEnds(text, Math.ceil(room / 2) + 1);
  let lo = 0;
  let hi = ends.length - 1;
  let best = "";
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const s = text.slice(0, ends[mid]) + ELLIPSIS;
    if (measure(s) <= room) {
      best = s;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return best;
}
