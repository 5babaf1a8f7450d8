/**
 * The history mirror's side of the quarantine (src/postgres/quarantine.ts):
 * which stream entries it gives up on and why, their raw fields read again
 * from the stream, and one log line per stream (never a value).
 */
import type { DataSource } from 'typeorm';
import type { MirrorStream } from '../core/ports';
import type { Logger } from '../core/logger';
import type { BatchFault } from '../postgres/pg-errors';
import { insertQuarantine, storedFields, type StoredValue } from '../postgres/quarantine';
import { logSafeMessage, storableText } from '../postgres/pg-errors';
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

/**
 * Reads the raw fields of `entries` (still in their streams: nothing is
 * acknowledged before it is quarantined) as bytes, so that what Redis
 * holds is kept exactly, invalid UTF-8 included. An entry no longer there
 * (removed meanwhile) falls back to the fields the writer parsed.
 * @throws when Redis fails (the batch is then retried).
 */
async function rawFields(stream: Pick<MirrorStream, 'rawEntries'>, entries: StreamEntry[]): Promise<Record<string, StoredValue>[]> {
  return Promise.all(
    entries.map(async (e) => {
      const [raw] = await stream.rawEntries(e.queue, [e.id]);
      if (raw) return storedFields(raw);
      return storedFields(Object.entries(e.fields).flatMap(([k, v]) => [Buffer.from(storableText(k)), Buffer.from(storableText(v))]));
    }),
  );
}

/**
 * Stores the history mirror's `refusals` in `audit_quarantine` with their raw
 * fields read again from Redis ({@link insertQuarantine}).
 * @throws when Redis or PostgreSQL is unavailable (nothing is acknowledged then).
 */
export async function writeQuarantine(db: DataSource, stream: Pick<MirrorStream, 'rawEntries' | 'streamName'>, refusals: Refusal[]): Promise<void> {
  const eventsKeyOf = (queue: string) => stream.streamName(queue);
  const byKey = new Map<string, Refusal>();
  for (const r of refusals) byKey.set(`${r.entry.queue}\n${r.entry.id}`, r);
  const all = [...byKey.values()];
  const fields = await rawFields(stream, all.map((r) => r.entry));
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
      // A projection reason is the writer's own text (src/mirror/projection.ts: never a value).
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
