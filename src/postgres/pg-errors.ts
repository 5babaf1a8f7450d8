/**
 * What a failed audit batch says about its data (PostgreSQL manual,
 * appendix A, "PostgreSQL Error Codes"), for the writer's choice between
 * backing off (PostgreSQL is unwell: the same batch will go in later) and
 * isolating the entries PostgreSQL refuses (src/mirror/mirror-writer.ts).
 */

/**
 * - `data`: PostgreSQL refused this batch's values and will refuse them
 *   again: class 22 (data exception: a time or number out of range, a bad
 *   uuid), 23 (integrity: a NOT NULL column left null), 21 (cardinality),
 *   54 (program limit: an index row too large), 42804 / 42P18 (a value of
 *   the wrong type).
 * - `unavailable`: PostgreSQL (or the way to it) is down, busy or
 *   misconfigured, whatever the data: no SQLSTATE at all (connection
 *   refused or reset, a timeout, a pool error), 08 (connection), 53
 *   (resources: disk full, out of memory, too many connections), 57
 *   (operator intervention: 57P01 admin shutdown, 57014 statement timeout),
 *   58 (system/I/O), 40 (serialization, deadlock), 55 (lock not available,
 *   object in use), 25 (transaction state), 28 (authorization), 3D (no such
 *   database), 42 other than the type errors above (a missing table or
 *   column, a privilege revoked: the schema, not the data), XX001/XX002
 *   (corruption). Never a reason to quarantine anything.
 * - `unknown`: any other SQLSTATE (XX000, P0001, 0A000, …): possibly the
 *   data's; the writer takes it as such only once the same batch has
 *   failed with it several times in a row (see the writer).
 */
export type BatchFault = 'data' | 'unavailable' | 'unknown';

const DATA_CLASSES = new Set(['21', '22', '23', '54']);
const DATA_CODES = new Set(['42804', '42P18']);
const UNAVAILABLE_CLASSES = new Set(['08', '25', '28', '3D', '40', '42', '53', '55', '57', '58']);
const UNAVAILABLE_CODES = new Set(['XX001', 'XX002']);

/** The SQLSTATE of an error PostgreSQL sent (a pg DatabaseError: `code` and `severity`), or null for any other error (socket, timeout, pool). */
export function sqlState(e: unknown): string | null {
  const x = e as { code?: unknown; severity?: unknown } | null;
  if (!x || typeof x.code !== 'string' || typeof x.severity !== 'string' || !/^[0-9A-Z]{5}$/.test(x.code)) return null;
  return x.code;
}

/** Classifies a batch failure (see {@link BatchFault}). */
export function batchFault(e: unknown): BatchFault {
  const code = sqlState(e);
  if (code === null) return 'unavailable';
  const cls = code.slice(0, 2);
  if (DATA_CLASSES.has(cls) || DATA_CODES.has(code)) return 'data';
  if (UNAVAILABLE_CLASSES.has(cls) || UNAVAILABLE_CODES.has(code)) return 'unavailable';
  return 'unknown';
}

/**
 * An error message fit for a log line: PostgreSQL's messages quote the
 * values they refuse (`invalid input syntax for type uuid: "…"`, `value
 * "…" is out of range`), so every quoted part, and everything after the
 * first colon, goes; at most 200 characters. The whole message belongs in
 * the quarantine table only.
 */
export function logSafeMessage(message: string): string {
  const head = message.split(':')[0];
  return head.replace(/"[^"]*"?|'[^']*'?/g, '"…"').slice(0, 200);
}

/**
 * Text any PostgreSQL text column takes: NUL (which it cannot store) and
 * lone UTF-16 surrogates (which have no UTF-8 form) become U+FFFD.
 */
export function storableText(s: string): string {
  return s.replace(UNSTORABLE, '\uFFFD');
}

/** NUL, a high surrogate without its low one, a low one without its high one. */
// eslint-disable-next-line no-control-regex -- NUL is what it looks for
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * Text any PostgreSQL text column takes, keeping what was there readable:
 * NUL and lone surrogates become their JSON escape as text (`\u0000`,
 * `\ud800`), for a record that must say what arrived (the operator log's
 * target of a hostile request) rather than drop or blur it.
 */
export function escapedText(s: string): string {
  return s.replace(UNSTORABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
