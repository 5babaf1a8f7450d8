/**
 * Rows for `COPY … FROM STDIN` in PostgreSQL's text format (manual, COPY,
 * "Text Format"): one line per row, columns separated by a tab, `\N` for
 * null, and a backslash, newline, carriage return or tab inside a value
 * written as `\\`, `\n`, `\r`, `\t`.
 *
 * Why COPY: the mirror writer's fresh inserts (job_events, job_logs, jobs,
 * job_executions) were `INSERT … SELECT FROM unnest(array literals)`, where
 * PostgreSQL parses every element of every array literal and then runs the
 * executor per row; COPY's row path is cheaper (measured on 30,000
 * job_events rows, same data, no index: 4.0 vs 11.0 µs per row).
 */

const NULL = '\\N';

/** Characters that must be escaped in a text-format field (NUL, which PostgreSQL text cannot hold, is looked for with includes). */
const NEEDS_ESCAPE = /[\\\n\r\t]/;

/**
 * One text field. A NUL character becomes U+FFFD, as in the array
 * literals (src/postgres/pg-array.ts): a NUL in a handler's error message must
 * not stall the writer on a batch PostgreSQL can never take.
 */
export function copyText(v: string | null | undefined): string {
  if (v === null || v === undefined) return NULL;
  if (!NEEDS_ESCAPE.test(v) && !v.includes('\u0000')) return v;
  let e = v;
  if (e.includes('\\')) e = e.replace(/\\/g, '\\\\');
  if (e.includes('\n')) e = e.replace(/\n/g, '\\n');
  if (e.includes('\r')) e = e.replace(/\r/g, '\\r');
  if (e.includes('\t')) e = e.replace(/\t/g, '\\t');
  if (e.includes('\u0000')) e = e.replaceAll('\u0000', '\uFFFD');
  return e;
}

const INTEGER = /^-?\d+$/;

/**
 * One numeric field: a finite number, or a decimal string (bigint stream
 * ids). Anything else is null, as numArray does: a corrupt numeric field
 * lands as NULL rather than failing the batch for good.
 */
export function copyNumber(v: number | string | null | undefined): string {
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : NULL;
  return typeof v === 'string' && INTEGER.test(v) ? v : NULL;
}

/** The JavaScript Date range ends, ms (ECMA-262 21.4.1.22): beyond it there is no ISO string. */
const MAX_DATE_MS = 8.64e15;
/** PostgreSQL's earliest timestamp, 4714-11-24 00:00 UTC BC, ms (manual 8.5): earlier is out of its range. */
const MIN_PG_MS = -210_866_803_200_000;

let lastMs = NaN;
let lastIso = '';

/**
 * One timestamptz field from epoch ms, as ISO 8601 UTC with ms
 * (`2026-12-01T10:00:00.123Z`, which timestamptz input reads exactly), over
 * the whole Date range: a runAt may lie past year 9999, where toISOString
 * writes `+010000-…`, which PostgreSQL refuses (and years ≤ 0 as `0000-…`
 * or `-000001-…`, which it reads only as `0001-… BC`, `0002-… BC`).
 * Null, non-finite and out-of-range times (for JavaScript or PostgreSQL) are null. Events of one batch
 * share their times a lot (a script call stamps all its jobs with one
 * `TIME`), so the last conversion is remembered.
 */
export function copyTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !(ms <= MAX_DATE_MS && ms >= MIN_PG_MS)) return NULL;
  if (ms !== lastMs) {
    const iso = new Date(ms).toISOString();
    lastIso = iso.charCodeAt(0) === 43 || iso.charCodeAt(0) === 45 || iso.startsWith('0000') ? isoForPostgres(iso) : iso;
    lastMs = ms;
  }
  return lastIso;
}

/** An ISO string of a year outside 1..9999 as PostgreSQL reads it: the year unpadded, or as a BC year (ISO year 0 is 1 BC). */
function isoForPostgres(iso: string): string {
  const end = iso.indexOf('-', 1);
  const year = Number(iso.slice(0, end));
  return year > 0 ? String(year) + iso.slice(end) : String(1 - year).padStart(4, '0') + iso.slice(end) + ' BC';
}
