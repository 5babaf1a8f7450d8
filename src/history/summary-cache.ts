import type { DataSource } from 'typeorm';
import { epochMs } from './common';

/**
 * The model summaries kept per dead-letter group (`dlq_summaries`, migration
 * 1796002100000-DlqSummaries) and the hourly budget's call log
 * (`summary_model_calls`). Each read is a primary-key or index probe.
 * Times are epoch ms.
 */

/** One group's row: its last model summary (null fields until one was made), a pending request, the last failure. */
export interface CachedSummary {
  fingerprint: string;
  text: string | null;
  nextStep: string | null;
  model: string | null;
  generatedAt: number | null;
  summarizedCount: number | null;
  requestedAt: number | null;
  failedAt: number | null;
}

type Db = Pick<DataSource, 'query'>;

const COLUMNS = `fingerprint, text, next_step, model, ${epochMs('generated_at')} AS generated_ms, summarized_count,
  ${epochMs('requested_at')} AS requested_ms, ${epochMs('failed_at')} AS failed_ms`;

type Row = { fingerprint: string; text: string | null; next_step: string | null; model: string | null; generated_ms: number | null; summarized_count: number | null; requested_ms: number | null; failed_ms: number | null };

const toCached = (r: Row): CachedSummary => ({
  fingerprint: r.fingerprint, text: r.text, nextStep: r.next_step, model: r.model, generatedAt: r.generated_ms,
  summarizedCount: r.summarized_count, requestedAt: r.requested_ms, failedAt: r.failed_ms,
});

/** The rows of `project`'s groups `fingerprints` (primary-key probes), by fingerprint. */
export async function cachedSummaries(db: Db, project: string, fingerprints: string[]): Promise<Map<string, CachedSummary>> {
  if (!fingerprints.length) return new Map();
  const rows = (await db.query(`SELECT ${COLUMNS} FROM dlq_summaries WHERE project = $1 AND fingerprint = ANY($2::text[])`, [project, fingerprints])) as Row[];
  return new Map(rows.map((r) => [r.fingerprint, toCached(r)]));
}

/** `project`'s groups with a request to summarize again not answered yet (newest request first, at most `limit`). */
export async function pendingRequests(db: Db, project: string, limit: number): Promise<CachedSummary[]> {
  const rows = (await db.query(
    `SELECT ${COLUMNS} FROM dlq_summaries WHERE project = $1 AND requested_at IS NOT NULL
       AND requested_at > coalesce(generated_at, '-infinity') AND requested_at > coalesce(failed_at, '-infinity')
     ORDER BY requested_at DESC LIMIT $2`,
    [project, limit],
  )) as Row[];
  return rows.map(toCached);
}

/** Whether any project has a request to summarize again not answered yet (a scan of the small `dlq_summaries`). */
export async function anyPendingRequest(db: Db): Promise<boolean> {
  const rows = (await db.query(
    `SELECT 1 FROM dlq_summaries WHERE requested_at > coalesce(generated_at, '-infinity') AND requested_at > coalesce(failed_at, '-infinity') LIMIT 1`,
  )) as unknown[];
  return rows.length > 0;
}

/** Records a request to summarize `project`'s group again (`POST /jobs/dlq/groups/:fingerprint/summary`). */
export async function requestSummary(db: Db, project: string, fingerprint: string): Promise<void> {
  await db.query(
    `INSERT INTO dlq_summaries (project, fingerprint, requested_at) VALUES ($1, $2, clock_timestamp())
     ON CONFLICT (project, fingerprint) DO UPDATE SET requested_at = excluded.requested_at`,
    [project, fingerprint],
  );
}

/** Stores a model summary made for `project`'s group when it had `count` jobs. */
export async function storeSummary(db: Db, project: string, fingerprint: string, s: { text: string; nextStep: string; model: string; count: number }): Promise<void> {
  await db.query(
    `INSERT INTO dlq_summaries (project, fingerprint, text, next_step, model, generated_at, summarized_count)
     VALUES ($1, $2, $3, $4, $5, clock_timestamp(), $6)
     ON CONFLICT (project, fingerprint) DO UPDATE SET text = excluded.text, next_step = excluded.next_step, model = excluded.model,
       generated_at = excluded.generated_at, summarized_count = excluded.summarized_count`,
    [project, fingerprint, s.text, s.nextStep, s.model, s.count],
  );
}

/** Records a failed model call for `project`'s group (`why` names no secret and no payload value). */
export async function storeFailure(db: Db, project: string, fingerprint: string, why: string): Promise<void> {
  await db.query(
    `INSERT INTO dlq_summaries (project, fingerprint, failed_at, failure) VALUES ($1, $2, clock_timestamp(), $3)
     ON CONFLICT (project, fingerprint) DO UPDATE SET failed_at = excluded.failed_at, failure = excluded.failure`,
    [project, fingerprint, why.slice(0, 500)],
  );
}

/** Model calls made in the last hour (the `summary_model_calls_at` index). */
export async function callsInLastHour(db: Db): Promise<number> {
  const [r] = (await db.query(`SELECT count(*)::int AS n FROM summary_model_calls WHERE at > now() - interval '1 hour'`)) as { n: number }[];
  return r.n;
}

/** Logs one model call (it counts against the hourly budget whatever its outcome). */
export async function logCall(db: Db, project: string, fingerprint: string, outcome: 'ok' | 'failed'): Promise<void> {
  await db.query(`INSERT INTO summary_model_calls (project, fingerprint, outcome) VALUES ($1, $2, $3)`, [project, fingerprint, outcome]);
}

/**
 * Deletes the rows of groups nothing happened to for `days` (no summary written, asked for or failed): a group
 * retried or purged long ago leaves no row behind; one still there is summarized again (one call) if still listed.
 */
export async function pruneSummaries(db: Db, days: number): Promise<void> {
  await db.query(
    `DELETE FROM dlq_summaries WHERE greatest(generated_at, requested_at, failed_at) < now() - make_interval(days => $1)`,
    [days],
  );
}

/** Deletes call-log rows older than a day. */
export async function pruneCalls(db: Db): Promise<void> {
  await db.query(`DELETE FROM summary_model_calls WHERE at < now() - interval '1 day'`);
}
