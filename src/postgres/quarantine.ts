/**
 * The quarantine of every Redis-stream → PostgreSQL writer (the history
 * mirror, src/mirror/quarantine.ts; the operator-log flusher,
 * src/oplog/oplog-flusher.ts): entries a writer cannot write — PostgreSQL
 * refuses their values, or the writer cannot read them — are kept in
 * `audit_quarantine` (migration 1796001000000) with the error and their raw
 * fields, then acknowledged like written entries, so that no entry can stop
 * a writer (API.md v1.2). This write is the one that must not fail on
 * content: every text is made storable and every field value that is not
 * storable text goes in as its bytes (base64).
 */
import { isUtf8 } from 'node:buffer';
import type { DataSource } from 'typeorm';
import { batchFault, logSafeMessage, storableText } from './pg-errors';

/** A field value stored as it is up to this many bytes; a longer one keeps its first bytes (base64) and its length. */
export const QUARANTINE_FIELD_BYTES = 4 * 2 ** 20;
/** Bytes of field values kept per entry; values past it keep only their length. */
export const QUARANTINE_ENTRY_BYTES = 32 * 2 ** 20;
/** Rows per INSERT, and at most ~this many bytes of fields per INSERT. */
const ROWS_PER_INSERT = 500;
const BYTES_PER_INSERT = 64 * 2 ** 20;

export type StoredValue = string | { base64: string } | { bytes: number; head_base64: string } | { bytes: number; omitted: true };

/**
 * An entry's raw fields as a jsonb object: name → value. A value that is
 * valid UTF-8 without NUL (what jsonb and text can hold) is a string;
 * anything else is `{"base64": …}` of its exact bytes; over
 * QUARANTINE_FIELD_BYTES, `{"bytes": n, "head_base64": …}`; past
 * QUARANTINE_ENTRY_BYTES for the entry, `{"bytes": n, "omitted": true}`. A
 * name that is not storable text is `base64:<its bytes>`; a repeated name
 * gets `#2`, `#3`… appended.
 * @param flat the entry's field list as Redis holds it (name, value, …).
 */
export function storedFields(flat: Buffer[]): Record<string, StoredValue> {
  // No prototype: a field named `__proto__` is a field like any other.
  const out: Record<string, StoredValue> = Object.create(null);
  let kept = 0;
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const k = flat[i];
    let name = isText(k) ? k.toString('utf8') : `base64:${k.toString('base64')}`;
    for (let n = 2; name in out; n++) name = `${name.replace(/#\d+$/, '')}#${n}`;
    const v = flat[i + 1];
    if (kept >= QUARANTINE_ENTRY_BYTES) out[name] = { bytes: v.length, omitted: true };
    else if (v.length > QUARANTINE_FIELD_BYTES) out[name] = { bytes: v.length, head_base64: v.subarray(0, QUARANTINE_FIELD_BYTES).toString('base64') };
    else out[name] = isText(v) ? v.toString('utf8') : { base64: v.toString('base64') };
    kept += Math.min(v.length, QUARANTINE_FIELD_BYTES);
  }
  return out;
}

const isText = (b: Buffer) => !b.includes(0) && isUtf8(b);

const INSERT = `INSERT INTO audit_quarantine (stream_key, entry_id, queue, fields, error_code, error_message)
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::text[], $6::text[])
  ON CONFLICT (stream_key, entry_id) DO UPDATE SET fields = EXCLUDED.fields, error_code = EXCLUDED.error_code,
    error_message = EXCLUDED.error_message, quarantined_at = now()`;

/**
 * One quarantined record of any writer that moves buffered Redis-stream
 * entries into PostgreSQL (the history mirror, the operator-log flusher
 * src/oplog/oplog-flusher.ts, …): the one table and the one write path for
 * all of them (API.md v1.2: no record stops a writer).
 */
export interface QuarantineRow {
  /** The Redis stream the entry was read from. */
  streamKey: string;
  /** Its stream entry id. */
  entryId: string;
  /** The queue of a history-mirror entry; '' for an entry of no queue (an operator-log record). */
  queue: string;
  /** Its raw fields ({@link storedFields}). */
  fields: Record<string, StoredValue>;
  /** A SQLSTATE, `projection`, `encoding` or `unreadable` (the writer could not read the entry). */
  code: string;
  /** The whole error message: for the table only, never a log. */
  message: string;
}

/**
 * Stores `rows` in `audit_quarantine` (a row quarantined again, as after a
 * crash before its acknowledgement, is updated in place). Should PostgreSQL
 * refuse a row anyway, that chunk goes in again with its fields left out, so
 * the content of an entry cannot fail this write.
 * @throws when PostgreSQL is unavailable (the writer then acknowledges nothing).
 */
export async function insertQuarantine(db: DataSource, rows: QuarantineRow[]): Promise<void> {
  for (let i = 0; i < rows.length; ) {
    let bytes = 0;
    let j = i;
    const json: string[] = [];
    while (j < rows.length && j - i < ROWS_PER_INSERT && (j === i || bytes < BYTES_PER_INSERT)) {
      const s = JSON.stringify(rows[j].fields);
      json.push(s);
      bytes += s.length;
      j++;
    }
    const chunk = rows.slice(i, j);
    const params = (f: string[]) => [
      chunk.map((r) => storableText(r.streamKey)),
      chunk.map((r) => storableText(r.entryId)),
      chunk.map((r) => storableText(r.queue)),
      f,
      chunk.map((r) => storableText(r.code)),
      chunk.map((r) => storableText(r.message)),
    ];
    try {
      await db.query(INSERT, params(json));
    } catch (e) {
      if (batchFault(e) === 'unavailable') throw e;
      await db.query(INSERT, params(chunk.map(() => JSON.stringify({ omitted: `not storable (${logSafeMessage((e as Error).message)})` }))));
    }
    i = j;
  }
}
