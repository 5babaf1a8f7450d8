import type { DataSource } from 'typeorm';
import { MIRROR_GROUP } from '../../src/redis/keys';
import { entryFields, StreamEntry } from '../../src/mirror/projection';
import type { RedisClient } from '../../src/redis/connection';
import type { QueueKeys } from '../../src/redis/keys';

/**
 * Helpers for the audit-mirror tests (test/integration/audit): reading the
 * events streams as the writer sees them, what Redis still holds for the
 * writer, and PostgreSQL rows in comparable form.
 */

type XEntries = [string, string[]][];

/** Every entry of the queues' events streams (XRANGE, paged; nothing consumed), each queue in stream order. */
export async function captureStreams(
  redis: RedisClient,
  store: { keys(queue: string): QueueKeys },
  queues: string[],
): Promise<StreamEntry[]> {
  const out: StreamEntry[] = [];
  for (const queue of queues) {
    let start = '-';
    for (;;) {
      const page = (await redis.xrange(
        store.keys(queue).events,
        start,
        '+',
        'COUNT',
        5000,
      )) as XEntries;
      for (const [id, fields] of page) out.push({ queue, id, fields: entryFields(fields) });
      if (page.length < 5000) break;
      start = '(' + page[page.length - 1][0];
    }
  }
  return out;
}

/** Entries ever added to a stream (XINFO STREAM entries-added, Redis ≥ 7): survives XDEL. */
export async function entriesAdded(redis: RedisClient, eventsKey: string): Promise<number> {
  const info = (await (redis as any).xinfo('STREAM', eventsKey)) as (string | number)[];
  const i = info.indexOf('entries-added');
  if (i < 0) throw new Error('XINFO STREAM has no entries-added (Redis 7 needed)');
  return Number(info[i + 1]);
}

/** Entries still in the streams (XLEN) and entries delivered to the audit group but not acked (XPENDING). */
export async function outbox(
  redis: RedisClient,
  store: { keys(queue: string): QueueKeys },
  queues: string[],
): Promise<{ len: number; pending: number }> {
  let len = 0;
  let pending = 0;
  for (const q of queues) {
    const k = store.keys(q).events;
    len += await redis.xlen(k);
    const p = (await (redis as any).xpending(k, MIRROR_GROUP).catch(() => [0])) as [number];
    pending += Number(p[0]);
  }
  return { len, pending };
}

/** A stream entry as the job_events row it must become (see lua/includes/emit.lua). */
export function expectedEventRow(e: StreamEntry) {
  const f = e.fields;
  const [ms, seq] = e.id.split('-');
  const s = (v: string | undefined) => (v === undefined || v === '' ? null : v);
  return {
    queue: e.queue,
    stream_ms: ms,
    stream_seq: seq,
    job_id: f.j,
    at_ms: Number(f.at),
    event: f.e,
    from_status: s(f.f),
    to_status: s(f.t),
    attempt: Number(f.a),
    execution_seq: f.x === undefined || f.x === '' ? null : Number(f.x),
    worker_id: s(f.w),
    reason: s(f.r),
    error: s(f.er),
    data: f.e === 'enqueued' || f.e === 'debounced' ? s(f.p) : s(f.d),
  };
}

/** job_events rows in the shape of expectedEventRow, in stream order per queue (numeric: the table's columns, not the text aliases). */
export async function eventRows(db: DataSource, jobIds?: string[]) {
  const rows = await db.query(
    `SELECT queue, stream_ms::text, stream_seq::text, job_id::text, round(extract(epoch FROM at) * 1000)::float8 AS at_ms, event,
            from_status, to_status, attempt, execution_seq, worker_id, reason, error, data
     FROM job_timeline ${jobIds ? 'WHERE job_id = ANY($1::uuid[])' : ''} ORDER BY queue, job_timeline.stream_ms, job_timeline.stream_seq`,
    jobIds ? [jobIds] : [],
  );
  return rows as ReturnType<typeof expectedEventRow>[];
}

/** Groups rows (or entries) by job id, keeping their order. */
export function groupBy<T>(items: T[], key: (t: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const it of items) {
    const k = key(it);
    let l = m.get(k);
    if (!l) m.set(k, (l = []));
    l.push(it);
  }
  return m;
}

/** Milliseconds since the epoch of a timestamptz value read by pg (Date), or null. */
export const msOf = (d: Date | null): number | null => (d === null ? null : d.getTime());
