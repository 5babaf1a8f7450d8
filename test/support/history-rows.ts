import type { DataSource } from 'typeorm';
import { entryFields, MirrorBatch, project, StreamEntry } from '../../src/mirror/projection';
import { batchMessage, planBatch, writeBatch } from '../../src/mirror/batch-writer';
import { sendBatch } from '../../src/postgres/pg-batch';
import { v7At } from './postgres';

/**
 * Events-stream entries of made-up jobs, as lua/includes/emit.lua writes
 * them, for the history tests that need rows written by the mirror's own
 * path (project + writeBatch) at chosen times. Stream ids are `<at>-<n>`
 * with a per-process counter, so every entry is distinct.
 */
let seq = 0;
const OPTS = '3;1000;exponential|2000|3600000|equal';

export function enqueuedEntry(queue: string, id: string, at: number): StreamEntry {
  return { queue, id: `${at}-${seq++}`, fields: entryFields(['h', `enqueued||waiting|0|${at}|${id}|||0||${OPTS}`, 'ty', `${queue}.t`, 'p', '{"n":1}']) };
}

/** claimed at `at`, completed (or failed, `failed`) at `at + 10`: one execution. */
export function runEntries(queue: string, id: string, at: number, end: 'completed' | 'failed' = 'completed'): StreamEntry[] {
  const finish =
    end === 'completed'
      ? ['h', `completed|active|completed|1|${at + 10}|${id}|1|10`, 'w', 'w1', 'd', '{"ok":true}']
      : ['h', `failed|active|failed|1|${at + 10}|${id}|1|10`, 'w', 'w1', 'er', 'boom'];
  return [
    { queue, id: `${at}-${seq++}`, fields: entryFields(['h', `claimed|waiting|active|1|${at}|${id}|1|`, 'w', 'w1']) },
    { queue, id: `${at + 5}-${seq++}`, fields: entryFields(['e', 'log', 'j', id, 'a', '1', 'at', String(at + 5), 'lvl', 'info', 'm', 'working']) },
    { queue, id: `${at + 10}-${seq++}`, fields: entryFields(finish) },
  ];
}

/** A job created at `createdAt` (its id's time) and, unless `run` is false, run at `runAt` to its end. @returns its id. */
export function jobEntries(queue: string, createdAt: number, runAt = createdAt + 1, run: 'completed' | 'failed' | false = 'completed'): { id: string; entries: StreamEntry[] } {
  const id = v7At(createdAt);
  const entries = [enqueuedEntry(queue, id, createdAt)];
  if (run) entries.push(...runEntries(queue, id, runAt, run));
  return { id, entries };
}

/** Writes entries through the mirror's projection and batch writer (fresh: COPY; else the idempotent form). */
export async function mirror(db: DataSource, entries: StreamEntry[], fresh = true): Promise<void> {
  await writeBatch(db, project(entries), fresh);
}

/**
 * `b` as the writer before migration 1796001900000 projected it: no event
 * held by an execution row (every claimed and completed event a job_events
 * row, the execution rows without their stream ids). Changes `b` in place.
 */
export function unfolded(b: MirrorBatch): MirrorBatch {
  for (const e of b.events) e.folded = false;
  for (const x of [...b.starts, ...b.ends]) {
    Object.assign(x, { claimMs: null, claimSeq: null, claimEvent: undefined, endMs: null, endSeq: null, endEvent: undefined, result: null });
  }
  return b;
}

/** The columns migration 1796001900000 added to job_executions, which an older schema's COPY must not name. */
const FOLDED_COLUMNS = ['claim_ms', 'claim_seq', 'end_ms', 'end_seq', 'result'];

/**
 * Writes entries as the writer of the schema before migration 1796001800000
 * did (the fresh COPY form, without the `queue_stream_tops` row that table
 * did not exist for; no event held by an execution row, whose COPY names
 * none of the columns of migration 1796001900000): rows for the upgrade tests.
 */
export async function mirrorAsBefore(db: DataSource, entries: StreamEntry[]): Promise<void> {
  const plan = planBatch(unfolded(project(entries)), true)
    .filter((st) => !st.sql.includes('queue_stream_tops'))
    .map((st) => {
      if (!st.sql.startsWith('COPY job_executions')) return st;
      const cols = st.sql.slice(st.sql.indexOf('(') + 1, st.sql.indexOf(')')).split(', ');
      const keep = cols.map((c) => !FOLDED_COLUMNS.includes(c));
      const rows = st.copy!.split('\n').filter((l) => l !== '');
      // Unfolded: every dropped field is \N.
      return {
        ...st,
        sql: `COPY job_executions (${cols.filter((_, i) => keep[i]).join(', ')}) FROM STDIN`,
        copy: rows.map((l) => l.split('\t').filter((_, i) => keep[i]).join('\t') + '\n').join(''),
      };
    });
  await sendBatch(db, batchMessage(plan));
}

/** Which partition (table name) holds each row of `table` whose `col` is `id`. */
export async function partitionsOf(db: DataSource, table: string, col: string, id: string): Promise<string[]> {
  const rows = (await db.query(`SELECT DISTINCT tableoid::regclass::text AS t FROM ${table} WHERE ${col} = $1`, [id])) as { t: string }[];
  return rows.map((r) => r.t).sort();
}

/** job_counts as [queue, status, n] rows (n > 0), and the same counted from `jobs`: they must agree. */
export async function countsAndTruth(db: DataSource): Promise<{ counts: [string, string, number][]; truth: [string, string, number][] }> {
  const counts = (await db.query(`SELECT queue, status, n::int AS n FROM job_counts WHERE n <> 0 ORDER BY 1, 2`)) as { queue: string; status: string; n: number }[];
  const truth = (await db.query(`SELECT queue, status, count(*)::int AS n FROM jobs GROUP BY 1, 2 ORDER BY 1, 2`)) as { queue: string; status: string; n: number }[];
  const rows = (r: { queue: string; status: string; n: number }[]) => r.map((x) => [x.queue, x.status, x.n] as [string, string, number]);
  return { counts: rows(counts), truth: rows(truth) };
}
