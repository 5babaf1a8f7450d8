/**
 * PostgreSQL array literals for the audit writer's unnest parameters.
 *
 * Format: PostgreSQL manual, "8.15.6 Array Input and Output Syntax" —
 * `{e1,e2,...}`; an element in double quotes may hold anything once `"` and
 * `\` are backslash-escaped; an unquoted `NULL` is the null value.
 *
 * Why not leave it to `pg`: its generic encoder runs prepareValue and two
 * regex replaces on every element of every array, on the writer's critical
 * path (≈10 % of its CPU per event). Here numbers go out bare, a string
 * without `"` or `\` is quoted with no replace at all, and the literal is
 * built while the previous batch is still in PostgreSQL (AuditWriter reads
 * and encodes ahead).
 */

const NEEDS_ESCAPE = /["\\\u0000]/;

/**
 * One text element, always quoted. A NUL character (which a handler's error
 * message may carry, and PostgreSQL text cannot store: "invalid byte sequence
 * for encoding UTF8: 0x00") becomes U+FFFD, so one such string cannot stall
 * the writer on a batch it could never commit.
 */
function quote(s: string): string {
  if (!NEEDS_ESCAPE.test(s)) return `"${s}"`;
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '"' || c === '\\') out += '\\' + c;
    else if (c === '\u0000') out += '\uFFFD';
    else out += c;
  }
  return out + '"';
}

/**
 * `text[]` / `uuid[]` literal: null and undefined become NULL.
 * @example textArray(['a', null, 'say "hi"']) === '{"a",NULL,"say \\"hi\\""}'
 */
export function textArray(values: readonly (string | null | undefined)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i) out += ',';
    const v = values[i];
    out += v === null || v === undefined ? 'NULL' : quote(v);
  }
  return out + '}';
}

/**
 * `int[]` / `bigint[]` / `float8[]` literal. Values are numbers, or decimal
 * strings for bigint stream ids (passed through: they come from Redis stream
 * ids, digits only). null, undefined and non-finite numbers become NULL —
 * a corrupt numeric field lands as NULL rather than failing the batch for good.
 */
export function numArray(values: readonly (number | string | null | undefined)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i) out += ',';
    const v = values[i];
    if (typeof v === 'number') out += Number.isFinite(v) ? String(v) : 'NULL';
    else if (typeof v === 'string' && /^-?\d+$/.test(v)) out += v;
    else out += 'NULL';
  }
  return out + '}';
}
