import { errorFingerprint } from '../core/error-fingerprint';

/** Anything that runs a parameterized query (a DataSource, an EntityManager, a QueryRunner). */
interface Queryable {
  query(sql: string, params?: unknown[]): Promise<unknown>;
}

/**
 * Gives dead-letter rows that have none their fingerprint (errorFingerprint
 * of `last_error`, src/core/error-fingerprint.ts): rows made before
 * migration 1796001400000 and rows an mirror writer of an older version
 * still writes during a rolling upgrade. At most `max` rows per call, read
 * through the `dead_letter_jobs_fingerprint` index; a row without an
 * error gets the fingerprint of the empty message (as the writer and
 * jobFingerprint count it), so it is never picked again.
 * @returns how many rows it set (0: nothing left).
 * @throws whatever PostgreSQL answers.
 */
export async function backfillFingerprints(db: Queryable, max = 1000): Promise<number> {
  const rows = (await db.query(`SELECT job_id, last_error FROM dead_letter_jobs WHERE fingerprint IS NULL LIMIT $1`, [max])) as { job_id: string; last_error: string | null }[];
  if (!rows.length) return 0;
  await db.query(
    `UPDATE dead_letter_jobs d SET fingerprint = u.fp FROM unnest($1::uuid[], $2::text[], $3::text[]) AS u(id, fp, er)
     WHERE d.job_id = u.id AND d.fingerprint IS NULL AND d.last_error IS NOT DISTINCT FROM u.er`,
    [rows.map((r) => r.job_id), rows.map((r) => errorFingerprint(r.last_error ?? '')), rows.map((r) => r.last_error)],
  );
  return rows.length;
}
