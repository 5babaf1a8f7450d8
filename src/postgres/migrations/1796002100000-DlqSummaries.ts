import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Failure summaries by a model (API.md v1.3 "Failure summaries"):
 * - `dlq_summaries`: one row per dead-letter group of a project (`project`, `fingerprint`): the model's last summary
 *   (`text`, `next_step`, `model`, `generated_at`, `summarized_count` = the group's size then: made again once it has
 *   doubled), a pending request to make it again (`requested_at`, by `POST /jobs/dlq/groups/:fingerprint/summary`),
 *   and the last failed attempt (`failed_at`, `failure`: why, never the key or a payload).
 * - `summary_model_calls`: one row per model call (`at`), the hourly budget's count (SUMMARY_MAX_PER_HOUR); rows
 *   older than a day are deleted by the summarizer.
 */
export class DlqSummaries1796002100000 implements MigrationInterface {
  name = 'DlqSummaries1796002100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS dlq_summaries (
      project text NOT NULL,
      fingerprint text NOT NULL,
      text text,
      next_step text,
      model text,
      generated_at timestamptz,
      summarized_count int,
      requested_at timestamptz,
      failed_at timestamptz,
      failure text,
      PRIMARY KEY (project, fingerprint))`);
    await q.query(`CREATE TABLE IF NOT EXISTS summary_model_calls (
      id bigserial PRIMARY KEY,
      at timestamptz NOT NULL DEFAULT now(),
      project text NOT NULL,
      fingerprint text NOT NULL,
      outcome text NOT NULL)`);
    await q.query(`CREATE INDEX IF NOT EXISTS summary_model_calls_at ON summary_model_calls (at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS summary_model_calls`);
    await q.query(`DROP TABLE IF EXISTS dlq_summaries`);
  }
}
