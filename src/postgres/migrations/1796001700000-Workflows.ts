import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Workflows (API.md v1.2 "Workflows", docs/workflows.md), the history side:
 * - `jobs.flow_id`, `jobs.flow_ref`, `jobs.on_dependency_failure`: a flow
 *   job's flow, its ref in the flow and its policy (`cancel` | `run`), from
 *   its `enqueued` event (stream fields fl, rf, fp); null for every other job
 *   and for every row mirrored before this version. Nullable without a
 *   default: PostgreSQL (11+) only records them in the catalog (no rewrite).
 * - `jobs_flow_id (flow_id, id DESC) WHERE flow_id IS NOT NULL`:
 *   `GET /jobs?flowId=` newest first (one ordered range, stopped by LIMIT;
 *   any other filter reads as a filter of at most the flow's 1,000 rows) and
 *   a flow's jobs for `GET /flows/:id` (src/history/flows.ts). Partial:
 *   jobs outside flows add no entry (the writer's cost is unchanged for
 *   them); a flow job pays one more index insertion per row version.
 *   Building it reads `jobs` once (no flow jobs exist before this version).
 * - `job_dependencies (job_id, depends_on_id, flow_id, ref)`: the edges of
 *   the flows' graphs (`ref` is the dependency's ref), from the same event
 *   (field dp). Written once per edge, never updated. The primary key
 *   serves a job's dependencies and the join from a flow's jobs; no other
 *   index (a job's dependents are read through its flow's jobs, ≤ 1,000).
 *   No foreign key: an edge may name a job of a queue mirrored later, and
 *   a check per edge would cost a flow of 1,000 × 1,000 edges a million
 *   probes.
 * No trigger of `jobs` reads these columns: the counters (`job_counts`,
 * `job_finishes`) are unchanged.
 */
export class Workflows1796001700000 implements MigrationInterface {
  name = 'Workflows1796001700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE jobs ADD COLUMN flow_id uuid, ADD COLUMN flow_ref text, ADD COLUMN on_dependency_failure text`);
    await q.query(`CREATE INDEX jobs_flow_id ON jobs (flow_id, id DESC) WHERE flow_id IS NOT NULL`);
    await q.query(`
      CREATE TABLE job_dependencies (
        job_id uuid NOT NULL,
        depends_on_id uuid NOT NULL,
        flow_id uuid NOT NULL,
        ref text NOT NULL,
        PRIMARY KEY (job_id, depends_on_id)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS job_dependencies`);
    await q.query(`DROP INDEX IF EXISTS jobs_flow_id`);
    await q.query(`ALTER TABLE jobs DROP COLUMN IF EXISTS on_dependency_failure, DROP COLUMN IF EXISTS flow_ref, DROP COLUMN IF EXISTS flow_id`);
  }
}
