import type { DataSource } from 'typeorm';
import { ValidationError } from '../core/errors';
import { epochMs, projectCondition } from './common';

/** One dead-letter group (API.md v1.1 "Dead-letter groups"); times epoch ms. */
export interface DlqGroup {
  fingerprint: string;
  /** The newest failure's error message of the group. */
  sample: string | null;
  count: number;
  /** Distinct job types of the group (at most {@link GROUP_NAMES_MAX}, sorted). */
  types: string[];
  /** Distinct queues of the group (at most {@link GROUP_NAMES_MAX}, sorted). */
  queues: string[];
  firstAt: number;
  lastAt: number;
}

/** Groups one call returns at most (the largest). */
export const GROUPS_LIMIT_DEFAULT = 100;
export const GROUPS_LIMIT_MAX = 500;
/** Types / queues listed per group at most. */
export const GROUP_NAMES_MAX = 20;

/**
 * The SQL of {@link dlqGroups}: one aggregate over the
 * `dead_letter_jobs_fingerprint` index (fingerprint, failed_at DESC)
 * INCLUDE (queue, type) — an index-only scan, no table row read — largest
 * groups first; then per group kept, its newest row's `last_error` as the
 * sample (one probe of the same index). With a queue, `queue = $n`; else,
 * with a project, the project's condition on the INCLUDEd `queue` (both an
 * index-only filter); with a fingerprint, that group only (one range of the
 * index). Returns the SQL and its parameters (the limit first).
 * Plans and timings at 100,000 DLQ rows: docs/query-plans.md.
 */
export function dlqGroupsSql(f: { queue?: string; project?: string | null; fingerprint?: string }, limit: number): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const param = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const n = param(limit);
  const cond = (col: string) =>
    f.queue !== undefined ? ` AND ${col} = ${param(f.queue)}` : f.project != null ? ` AND ${projectCondition(col, f.project, param)}` : '';
  const fp = f.fingerprint !== undefined ? param(f.fingerprint) : null;
  const outer = cond('queue') + (fp ? ` AND fingerprint = ${fp}` : '');
  const inner = cond('d.queue');
  const sql = `SELECT g.fingerprint, g.n::int AS count, g.types[1:${GROUP_NAMES_MAX}] AS types, g.queues[1:${GROUP_NAMES_MAX}] AS queues,
      ${epochMs('g.first_at')} AS first_ms, ${epochMs('g.last_at')} AS last_ms, s.last_error AS sample
    FROM (
      SELECT fingerprint, count(*) AS n, array_agg(DISTINCT type ORDER BY type) AS types, array_agg(DISTINCT queue ORDER BY queue) AS queues,
        min(failed_at) AS first_at, max(failed_at) AS last_at
      FROM dead_letter_jobs WHERE fingerprint IS NOT NULL${outer}
      GROUP BY fingerprint ORDER BY count(*) DESC, fingerprint LIMIT ${n}
    ) g CROSS JOIN LATERAL (
      SELECT d.last_error FROM dead_letter_jobs d WHERE d.fingerprint = g.fingerprint${inner} ORDER BY d.failed_at DESC LIMIT 1
    ) s
    ORDER BY g.n DESC, g.fingerprint`;
  return { sql, params };
}

/**
 * `GET /jobs/dlq/groups?queue=`: the dead-letter queue grouped by
 * fingerprint, largest group first (ties by fingerprint).
 * @param project the caller's project: only its queues' rows are grouped
 *   (null = every project); `filter.queue` is a qualified name (of that
 *   project). The group's `queues` are qualified names: the API renders them bare.
 * @param limit groups at most, 1..{@link GROUPS_LIMIT_MAX} (default {@link GROUPS_LIMIT_DEFAULT}).
 * @throws ValidationError (400) on a bad limit.
 */
export async function dlqGroups(db: DataSource, project: string | null, filter: { queue?: string; limit?: number; fingerprint?: string } = {}): Promise<DlqGroup[]> {
  const limit = filter.limit ?? GROUPS_LIMIT_DEFAULT;
  if (!Number.isInteger(limit) || limit < 1 || limit > GROUPS_LIMIT_MAX) {
    throw new ValidationError('invalid limit', [{ path: 'limit', message: `must be an integer 1..${GROUPS_LIMIT_MAX}` }]);
  }
  const { sql, params } = dlqGroupsSql({ queue: filter.queue, project, fingerprint: filter.fingerprint }, limit);
  const rows = (await db.query(sql, params)) as {
    fingerprint: string; count: number; types: string[]; queues: string[]; first_ms: number; last_ms: number; sample: string | null;
  }[];
  return rows.map((r) => ({
    fingerprint: r.fingerprint, sample: r.sample, count: r.count, types: r.types, queues: r.queues, firstAt: r.first_ms, lastAt: r.last_ms,
  }));
}
