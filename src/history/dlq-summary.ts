import type { DataSource } from 'typeorm';
import { GroupFacts, SampleJob, SUMMARY_HOURS, SUMMARY_SAMPLE, hourBucket } from '../core/dlq-summary';
import type { DlqGroup } from './dlq-groups';
import { epochMs, projectCondition } from './common';
import { idAtMs } from './list-jobs';

/** Payloads longer than this (characters of JSON text) are not read for their keys: the summary stays cheap whatever was enqueued. */
export const SUMMARY_PAYLOAD_READ_MAX = 16_384;
/** Sampled jobs per group whose payload is read for its keys (the newest); workers and attempts come from all {@link SUMMARY_SAMPLE}. */
export const SUMMARY_PAYLOAD_SAMPLE = 10;
/** Sampled jobs per group whose error message is read (the model's sample errors), each cut to {@link SUMMARY_ERROR_CHARS}. */
export const SUMMARY_ERROR_SAMPLE = 5;
export const SUMMARY_ERROR_CHARS = 2048;
/** Completed jobs read per group to tell which payload keys are new. */
const EARLIER_JOBS = 20;

/** The filter of a group listing: a qualified queue, else the project (null = every project). */
export interface GroupScope {
  queue?: string;
  project: string | null;
}

function scopeSql(scope: GroupScope, col: string, param: (v: unknown) => string): string {
  if (scope.queue !== undefined) return ` AND ${col} = ${param(scope.queue)}`;
  return scope.project != null ? ` AND ${projectCondition(col, scope.project, param)}` : '';
}

function params(): { list: unknown[]; param: (v: unknown) => string } {
  const list: unknown[] = [];
  return { list, param: (v: unknown) => (list.push(v), `$${list.length}`) };
}

/**
 * Failures per hour of each group over the 24 hours before `now`: one range
 * of the `dead_letter_jobs_fingerprint` index (fingerprint, failed_at DESC)
 * INCLUDE (queue, type) per fingerprint — an index-only scan, the scope a
 * filter on the INCLUDEd queue. $1 fingerprints, $2 now (epoch ms).
 */
export function hourlySql(scope: GroupScope, fingerprints: string[], now: number): { sql: string; params: unknown[] } {
  const p = params();
  const fps = p.param(fingerprints);
  const at = p.param(now);
  const sql = `SELECT fingerprint, floor((${at}::float8 - ${epochMs('failed_at')}) / 3600000)::int AS back, count(*)::int AS n
    FROM dead_letter_jobs
    WHERE fingerprint = ANY(${fps}::text[]) AND failed_at > to_timestamp((${at}::float8 - ${SUMMARY_HOURS * 3_600_000}) / 1000)${scopeSql(scope, 'queue', p.param)}
    GROUP BY 1, 2`;
  return { sql, params: p.list };
}

/**
 * The newest {@link SUMMARY_SAMPLE} dead-letter jobs of each group: the
 * 50th newest failure time first (an index-only scan of
 * `dead_letter_jobs_fingerprint` in its order, stopped after 50 entries,
 * whatever the group's size: without it the planner, which estimates every
 * group at the average size, reads a large group whole and sorts it), then
 * the rows from that time on (a bitmap of about 50), each with its last worker from `jobs` (a primary-key
 * probe that names one day partition at run time: the id is a parameter of
 * the nested loop). Only the newest {@link SUMMARY_PAYLOAD_SAMPLE} payloads of at
 * most {@link SUMMARY_PAYLOAD_READ_MAX} characters and the newest
 * {@link SUMMARY_ERROR_SAMPLE} error messages (cut) are sent back.
 */
export function sampleSql(scope: GroupScope, fingerprints: string[]): { sql: string; params: unknown[] } {
  const p = params();
  const fps = p.param(fingerprints);
  const scope1 = scopeSql(scope, 'd.queue', p.param);
  const scope2 = scopeSql(scope, 'i.queue', p.param);
  const sql = `SELECT f.fp AS fingerprint, s.job_id::text AS id, s.queue, s.type, s.attempts, ${epochMs('s.failed_at')} AS failed_ms,
      CASE WHEN s.rn <= ${SUMMARY_PAYLOAD_SAMPLE} AND length(s.payload) <= ${SUMMARY_PAYLOAD_READ_MAX} THEN s.payload END AS payload, w.worker_id,
      CASE WHEN s.rn <= ${SUMMARY_ERROR_SAMPLE} THEN left(s.last_error, ${SUMMARY_ERROR_CHARS}) END AS last_error
    FROM unnest(${fps}::text[]) AS f(fp)
    CROSS JOIN LATERAL (
      SELECT x.*, row_number() OVER (ORDER BY x.failed_at DESC) AS rn FROM (
        SELECT d.job_id, d.queue, d.type, d.attempts, d.failed_at, d.payload, d.last_error FROM dead_letter_jobs d
        WHERE d.fingerprint = f.fp${scope1} AND d.failed_at >= coalesce((
          SELECT i.failed_at FROM dead_letter_jobs i WHERE i.fingerprint = f.fp${scope2}
          ORDER BY i.failed_at DESC OFFSET ${SUMMARY_SAMPLE - 1} LIMIT 1), '-infinity')
        ORDER BY d.failed_at DESC LIMIT ${SUMMARY_SAMPLE}
      ) x
    ) s
    LEFT JOIN LATERAL (SELECT j.worker_id FROM jobs j WHERE j.id = s.job_id) w ON true
    ORDER BY f.fp, s.failed_at DESC`;
  return { sql, params: p.list };
}

/**
 * Payloads of the newest {@link EARLIER_JOBS} completed jobs of each group's
 * main queue and type created before the group's first failure: one ordered
 * range of `jobs_queue_status_id` (queue, status, id DESC) per group, newest
 * day partition first, stopped at the LIMIT. $1 fingerprints, $2 queues,
 * $3 types, $4 id bounds (UUIDv7 of the first failure's time).
 */
export function earlierSql(): string {
  return `SELECT v.fp AS fingerprint, e.payload
    FROM unnest($1::text[], $2::text[], $3::text[], $4::uuid[]) AS v(fp, q, t, b)
    CROSS JOIN LATERAL (
      SELECT CASE WHEN length(j.payload) <= ${SUMMARY_PAYLOAD_READ_MAX} THEN j.payload END AS payload FROM jobs j
      WHERE j.queue = v.q AND j.status = 'completed' AND j.id < v.b AND j.type = v.t ORDER BY j.id DESC LIMIT ${EARLIER_JOBS}
    ) e`;
}

/** Top-level keys of a JSON object text (sorted); null when it is not an object or was not read. */
export function payloadKeysOf(text: string | null): string[] | null {
  if (text === null) return null;
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.keys(v).sort() : null;
  } catch {
    return null;
  }
}

/** A sampled job with the raw texts the model summary may need (src/core/summary-request.ts decides what of them is sent). */
export interface SampleRow extends SampleJob {
  payload: string | null;
  lastError: string | null;
}

/** The most frequent value (ties: the first met). */
function mode(xs: string[]): string {
  const m = new Map<string, number>();
  let best = xs[0];
  for (const x of xs) {
    const n = (m.get(x) ?? 0) + 1;
    m.set(x, n);
    if (n > (m.get(best) ?? 0)) best = x;
  }
  return best;
}

/**
 * The facts of each listed group that its rules summary is made of
 * (src/core/dlq-summary.ts): three queries for all groups together —
 * the hourly counts, the sampled jobs, the earlier completed jobs' payload
 * keys. Plans and timings: docs/query-plans.md "Failure summaries".
 * @param groups as {@link dlqGroups} returned them for `scope` (qualified queue names).
 * @param now epoch ms: the end of the hourly series.
 * @returns facts by fingerprint, and the sampled rows (raw payload and error text) by fingerprint.
 */
export async function groupFacts(
  db: DataSource,
  scope: GroupScope,
  groups: DlqGroup[],
  now: number,
): Promise<{ facts: Map<string, GroupFacts>; samples: Map<string, SampleRow[]> }> {
  const facts = new Map<string, GroupFacts>();
  const samples = new Map<string, SampleRow[]>();
  if (!groups.length) return { facts, samples };
  const fps = groups.map((g) => g.fingerprint);
  const h = hourlySql(scope, fps, now);
  const s = sampleSql(scope, fps);
  const [hourRows, sampleRows] = (await Promise.all([db.query(h.sql, h.params), db.query(s.sql, s.params)])) as [
    { fingerprint: string; back: number; n: number }[],
    { fingerprint: string; id: string; queue: string; type: string; attempts: number; failed_ms: number; payload: string | null; worker_id: string | null; last_error: string | null }[],
  ];
  for (const r of sampleRows) {
    const list = samples.get(r.fingerprint) ?? [];
    list.push({
      id: r.id, queue: r.queue, type: r.type, attempts: r.attempts, workerId: r.worker_id, failedAt: r.failed_ms,
      payloadKeys: payloadKeysOf(r.payload), payload: r.payload, lastError: r.last_error,
    });
    samples.set(r.fingerprint, list);
  }
  const hourly = new Map<string, number[]>(fps.map((f) => [f, new Array<number>(SUMMARY_HOURS).fill(0)]));
  for (const r of hourRows) {
    const b = hourBucket(now - r.back * 3_600_000, now);
    const series = hourly.get(r.fingerprint);
    if (b !== null && series) series[b] += r.n;
  }
  // Which of the keys every failure had were absent before: only for groups whose failures share keys.
  const probe = groups.filter((g) => (samples.get(g.fingerprint) ?? []).some((j) => j.payloadKeys?.length));
  const earlier = new Map<string, string[][]>();
  if (probe.length) {
    const main = probe.map((g) => {
      const jobs = samples.get(g.fingerprint) ?? [];
      return { fp: g.fingerprint, q: mode(jobs.map((j) => j.queue)), t: mode(jobs.map((j) => j.type)), b: idAtMs(g.firstAt) };
    });
    const rows = (await db.query(earlierSql(), [main.map((m) => m.fp), main.map((m) => m.q), main.map((m) => m.t), main.map((m) => m.b)])) as {
      fingerprint: string; payload: string | null;
    }[];
    for (const r of rows) {
      const keys = payloadKeysOf(r.payload);
      if (keys === null) continue;
      earlier.set(r.fingerprint, [...(earlier.get(r.fingerprint) ?? []), keys]);
    }
  }
  for (const g of groups) {
    facts.set(g.fingerprint, {
      fingerprint: g.fingerprint, sample: g.sample, count: g.count, types: g.types, queues: g.queues, firstAt: g.firstAt, lastAt: g.lastAt,
      hourly: hourly.get(g.fingerprint) ?? new Array<number>(SUMMARY_HOURS).fill(0),
      jobs: (samples.get(g.fingerprint) ?? []).map(({ payload: _p, lastError: _e, ...j }) => j),
      earlierKeys: earlier.get(g.fingerprint) ?? null,
    });
  }
  return { facts, samples };
}
