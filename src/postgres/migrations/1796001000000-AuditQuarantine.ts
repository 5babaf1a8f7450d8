import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `audit_quarantine`: events-stream entries the audit writer could not
 * mirror (src/mirror/quarantine.ts) — PostgreSQL refused their values (a
 * time or number out of range, a bad uuid, an index row too large), or the
 * projection could not read them (a missing field, an unknown event name) —
 * kept with the error and their raw fields, then acknowledged, so one entry
 * never stops the mirror. Keyed by the entry (stream key, entry id): an
 * entry quarantined again after a crash updates its row. `fields` is the
 * entry's field list as a jsonb object, name → the value as text, or
 * `{"base64": …}` when it is not storable text (NUL, invalid UTF-8).
 * `error_code` is a SQLSTATE, `projection` or `encoding`. Rarely written,
 * read by operators; no index beyond the key.
 */
export class AuditQuarantine1796001000000 implements MigrationInterface {
  name = 'AuditQuarantine1796001000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE audit_quarantine (
        stream_key text NOT NULL,
        entry_id text NOT NULL,
        queue text NOT NULL,
        fields jsonb NOT NULL,
        error_code text NOT NULL,
        error_message text NOT NULL,
        quarantined_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (stream_key, entry_id)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS audit_quarantine`);
  }
}
