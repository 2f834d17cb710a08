// Numbers in the pages' one format, the rules of perfweb/captures/templatetags/numbers.py
// (what the server renders) for what the page draws itself, so a tooltip and the table
// beside it read alike: shares at the precision a small share needs, changes signed with
// the true minus.
"use strict";

export const MINUS = "\u2212";

// Python's format() rounds the double's exact value, an exact half to even; toFixed rounds
// the exact value too, but an exact half up (0.125 -> "0.13" where the server writes
// "0.12"). Intl.NumberFormat would round the shortest decimal instead ("0.005" for the
// double just above it). So: toFixed, and halves, seen in the exact expansion, to even.
const EXACT = 25;  // digits past `digits` that tell a half from a double beside it
function fixed(v, digits) {
  const exact = v.toFixed(digits + EXACT);
  const kept = exact.slice(0, exact.length - EXACT).replace(/\.$/, "");
  if (/^50*$/.test(exact.slice(exact.length - EXACT)) && "02468".includes(kept.at(-1))) {
    return kept;
  }
  return v.toFixed(digits);
}

/** 0.0042 -> "0.42%", 0.3443 -> "34.4%", 1 -> "100%"; signed: "+1.5%", "−0.42%", "0%".
 * One decimal from 1% up, two below (a share that rounds to 0.00% is "<0.01%"). */
export function percentText(share, signed = false) {
  if (share === null || share === undefined) return "";
  const v = 100 * share;
  const sign = signed && v > 0 ? "+" : v < 0 ? MINUS : "";
  const a = Math.abs(v);
  if (a === 0) return "0%";
  if (a < 0.005) return `${sign}<0.01%`;
  const text = a >= 1 ? `${fixed(a, 1)}%` : `${fixed(a, 2)}%`;
  return sign + (text === "100.0%" ? "100%" : text);
}

/** A value already in percent: 4.18 -> "4.18%". */
export const ofPercent = (value) => percentText(value / 100);

/** A change in percentage points, always signed: 13.37 -> "+13.4 pp", 0 -> "0 pp". */
export const points = (change) => percentText(change / 100, true).replace("%", " pp");

/** A change that is no share, signed at `digits` decimals: "+7", "−1.97", "0". */
export function signedText(change, digits = 2) {
  const text = fixed(Math.abs(change), digits);
  if (Number(text) === 0) return text;
  return (change > 0 ? "+" : MINUS) + text;
}
