import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `operator_audit`: the operator audit log (src/oplog). One row per answered
 * request to an `@Audited` route; `id` is the UUIDv7 the recorder made (the
 * flusher's idempotent insert key, the newest-first order and the cursor).
 * `(project, id)` serves `GET /audit-log`; the primary key serves the
 * retention prune (ids below the cutoff's UUIDv7).
 */
export class OperatorAudit1796001300000 implements MigrationInterface {
  name = 'OperatorAudit1796001300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE operator_audit (
        id uuid PRIMARY KEY,
        at timestamptz NOT NULL,
        project text NOT NULL,
        actor text NOT NULL,
        actor_kind text NOT NULL,
        action text NOT NULL,
        target text,
        method text NOT NULL,
        path text NOT NULL,
        status smallint NOT NULL,
        address text,
        request_id text
      )`);
    await q.query(`CREATE INDEX operator_audit_project_id ON operator_audit (project, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS operator_audit`);
  }
}
