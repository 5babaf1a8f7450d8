/**
 * Redis stream entry ids, `<ms>-<seq>`: two decimal integers of up to 64
 * bits each, without leading zeros. Kept as strings throughout (a double is
 * exact only below 2^53), compared and stepped exactly.
 */

/** Splits "ms-seq" into its two parts, as strings. */
export function splitStreamId(id: string): [string, string] {
  const i = id.indexOf('-');
  return [id.slice(0, i), id.slice(i + 1)];
}

/**
 * Orders stream ids numerically (< 0, 0, > 0 as for Array.sort). Without
 * leading zeros the longer part is the greater and equal lengths compare as
 * strings: exact for any 64-bit part, and no BigInt or split per call (the
 * writer compares every id of every batch it acknowledges).
 */
export function compareIds(a: string, b: string): number {
  const ia = a.indexOf('-');
  const ib = b.indexOf('-');
  if (ia !== ib) return ia - ib;
  for (let i = 0; i < ia; i++) if (a.charCodeAt(i) !== b.charCodeAt(i)) return a.charCodeAt(i) - b.charCodeAt(i);
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The smallest stream entry id after `id` (`<ms>-<seq+1>`), exact for any 64-bit seq. */
export function nextStreamId(id: string): string {
  const [ms, seq] = splitStreamId(id);
  return `${ms}-${(BigInt(seq) + 1n).toString()}`;
}
