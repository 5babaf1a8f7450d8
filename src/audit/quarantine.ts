/**
 * The quarantine of every Redis-stream → PostgreSQL writer (the history
 * mirror here, the operator-log flusher src/oplog/oplog-flusher.ts): stream
 * entries a writer cannot write — PostgreSQL
 * refuses their values, or the projection cannot read them — are kept in
 * `audit_quarantine` (migration 1796001000000) with the error and their raw
 * fields, then acknowledged like written entries, so that no entry can stop
 * the writer (src/audit/audit-writer.ts). This write is the one that must
 * not fail on content: every text is made storable and every field value
 * that is not storable text goes in as its bytes (base64).
 */
import { isUtf8 } from 'node:buffer';
import type { DataSource } from 'typeorm';
import type { RedisClient } from '../redis/connection';
import type { Logger } from '../workers/worker-runtime';
import { BatchFault, batchFault, logSafeMessage, storableText } from './pg-errors';
import type { StreamEntry } from './projection';

/** One entry the writer gives up on, and why. */
export interface Refusal {
  entry: StreamEntry;
  /** A SQLSTATE (`22008`), `projection` (the projection cannot read it), or `encoding` (building its statements threw). */
  code: string;
  /** The whole error message (PostgreSQL's may quote the value): for the table only, never a log. */
  message: string;
  /** How PostgreSQL's error was classified; absent for `projection` and `encoding`. */
  fault?: BatchFault;
}

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

/**
 * Reads the raw fields of `entries` (still in their streams: nothing is
 * acknowledged before it is quarantined) as bytes, so that what Redis
 * holds is kept exactly, invalid UTF-8 included. An entry no longer there
 * (removed meanwhile) falls back to the fields the writer parsed.
 * @throws when Redis fails (the batch is then retried).
 */
async function rawFields(redis: RedisClient, eventsKeyOf: (queue: string) => string, entries: StreamEntry[]): Promise<Record<string, StoredValue>[]> {
  return Promise.all(
    entries.map(async (e) => {
      const r = (await (redis as any).xrangeBuffer(eventsKeyOf(e.queue), e.id, e.id)) as [Buffer, Buffer[]][];
      if (r.length && r[0][1]) return storedFields(r[0][1]);
      return storedFields(Object.entries(e.fields).flatMap(([k, v]) => [Buffer.from(storableText(k)), Buffer.from(storableText(v))]));
    }),
  );
}

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

/**
 * Stores the history mirror's `refusals` in `audit_quarantine` with their raw
 * fields read again from Redis ({@link insertQuarantine}).
 * @throws when Redis or PostgreSQL is unavailable (nothing is acknowledged then).
 */
export async function writeQuarantine(db: DataSource, redis: RedisClient, eventsKeyOf: (queue: string) => string, refusals: Refusal[]): Promise<void> {
  const byKey = new Map<string, Refusal>();
  for (const r of refusals) byKey.set(`${r.entry.queue}\n${r.entry.id}`, r);
  const all = [...byKey.values()];
  const fields = await rawFields(redis, eventsKeyOf, all.map((r) => r.entry));
  await insertQuarantine(
    db,
    all.map((r, i) => ({ streamKey: eventsKeyOf(r.entry.queue), entryId: r.entry.id, queue: r.entry.queue, fields: fields[i], code: r.code, message: r.message })),
  );
}

/**
 * One warn line per stream for the entries quarantined from a batch:
 * counts, the stream key, the entry ids, the SQLSTATEs (or `projection`)
 * and log-safe messages — never a field value nor PostgreSQL's whole
 * message (it may quote one).
 */
export function logQuarantine(log: Logger, eventsKeyOf: (queue: string) => string, refusals: Refusal[]): void {
  const byQueue = new Map<string, Refusal[]>();
  for (const r of refusals) {
    let l = byQueue.get(r.entry.queue);
    if (!l) byQueue.set(r.entry.queue, (l = []));
    l.push(r);
  }
  for (const [queue, rs] of byQueue) {
    const codes: Record<string, number> = {};
    const errors = new Map<string, { code: string; message: string }>();
    for (const r of rs) {
      codes[r.code] = (codes[r.code] ?? 0) + 1;
      // A projection reason is the writer's own text (src/audit/projection.ts: never a value).
      const message = r.code === 'projection' ? r.message : logSafeMessage(r.message);
      errors.set(`${r.code} ${message}`, { code: r.code, message });
    }
    log.warn(
      {
        streamKey: eventsKeyOf(queue),
        count: rs.length,
        entries: rs.slice(0, 100).map((r) => r.entry.id),
        codes,
        errors: [...errors.values()].slice(0, 20),
      },
      'audit writer: entries quarantined',
    );
  }
}
