import type { DataSource } from 'typeorm';
import { entryFields, project, StreamEntry } from '../../src/mirror/projection';
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
 * Writes entries as the writer of the schema before migration 1796001800000
 * did (the fresh COPY form, without the `queue_stream_tops` row that table
 * did not exist for): rows for the upgrade tests.
 */
export async function mirrorAsBefore(db: DataSource, entries: StreamEntry[]): Promise<void> {
  const plan = planBatch(project(entries), true).filter((st) => !st.sql.includes('queue_stream_tops'));
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
