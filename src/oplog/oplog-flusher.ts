import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { Logger } from '../logging/logger';
import { OplogBufferGoneError, type OplogBuffer, type OplogEntry } from '../core/ports/oplog';
import { batchFault, logSafeMessage, sqlState } from '../postgres/pg-errors';
import { insertQuarantine, storedFields, type QuarantineRow } from '../postgres/quarantine';
import { parseRecord, storableRecord, type OplogRecord } from './oplog-record';

/** Consumer group of the flushers (every api replica joins it). */
export const OPLOG_GROUP = 'oplog-flushers';
/** Records per read and per INSERT (12 parameters each: well under PostgreSQL's 65,535). */
const BATCH = 500;
/** A record delivered to a flusher that has not written it for this long is taken over (that flusher died), ms. */
export const OPLOG_CLAIM_IDLE_MS = 30_000;
/** Pause between passes when the buffer is empty, ms (how late a record reaches PostgreSQL at most, PostgreSQL up). */
const IDLE_MS = 250;
/** Pause after a failed pass (PostgreSQL or Redis away), ms. */
const RETRY_MS = 1000;
/** Consumers with nothing pending that were idle this long are removed from the group (dead replicas), ms. */
const CONSUMER_FORGET_MS = 600_000;
/** Passes in a row a record alone must fail with an unclassified SQLSTATE (`unknown`, src/postgres/pg-errors.ts) before it is quarantined. */
const UNKNOWN_STRIKES = 3;
/** Columns of one operator_audit row. */
const COLUMNS = 12;

type Entry = OplogEntry;

/**
 * Moves operator-audit records from the Redis buffer stream (appended by
 * src/oplog/oplog-recorder.ts) into PostgreSQL `operator_audit`, in every api
 * replica, without ever writing a record twice:
 * - each replica is one consumer of the group {@link OPLOG_GROUP}: XREADGROUP
 *   hands each record to one of them;
 * - a pass writes first what this consumer was handed and has not written
 *   (its pending entries: a failed INSERT, PostgreSQL away), then takes over
 *   entries another consumer has held for {@link OPLOG_CLAIM_IDLE_MS} (it died:
 *   XAUTOCLAIM), then reads new ones;
 * - the INSERT is idempotent (`ON CONFLICT (id) DO NOTHING`, the id made by
 *   the recorder): a record written by a consumer that was slow, not dead,
 *   and written again by the one that took it over, is one row;
 * - once committed, the records are acknowledged and deleted from the stream
 *   (XACK + XDEL), so XLEN is exactly what is not in PostgreSQL yet — the
 *   bound the recorder checks.
 * PostgreSQL away: the records stay in Redis (pending) and are written when it
 * is back. Redis lost its data: the group is made again (NOGROUP).
 * A record that can never be written — PostgreSQL refuses its values, it
 * cannot be encoded, it is no record at all — is quarantined (the one
 * quarantine of every stream writer: src/postgres/quarantine.ts, table
 * `audit_quarantine`) with its reason and acknowledged, so it never stops the
 * records behind it (API.md v1.2). Texts are made storable first
 * ({@link storableRecord}), so a hostile target is recorded, not refused.
 */
export class OplogFlusher {
  readonly consumer = `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  private stopped = true;
  private groupReady = false;
  private lastForget = 0;
  private lastWarn = 0;
  /** Records that failed alone with an `unknown` SQLSTATE, and how many passes in a row. */
  private readonly strikes = new Map<string, number>();
  /** Rows written by this process since start. */
  written = 0;

  constructor(
    private readonly buffer: OplogBuffer,
    private readonly db: DataSource,
    private readonly log: Logger,
    /** How long an entry another consumer holds stays its own before this one takes it over, ms (tests shorten it). */
    private readonly claimIdleMs = OPLOG_CLAIM_IDLE_MS,
  ) {}

  /** Starts the passes (the first at once). */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops after the pass in flight, then makes one last pass (records of the last requests). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running?.catch(() => 0);
    await this.flushOnce().catch(() => 0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flushOnce().then(
        (n) => this.schedule(n >= BATCH ? 0 : IDLE_MS),
        (e: Error) => {
          const now = Date.now();
          if (now - this.lastWarn >= 10_000) {
            this.lastWarn = now;
            this.log.warn({ err: e.message }, 'operator audit: cannot move records to PostgreSQL now (they wait in Redis)');
          }
          this.schedule(RETRY_MS);
        },
      );
    }, ms);
    this.timer.unref?.();
  }

  /**
   * One pass (a pass in flight is joined).
   * @returns records written (or found already written) by this pass.
   * @throws when Redis or PostgreSQL cannot be reached (nothing is lost: the records stay pending).
   */
  flushOnce(): Promise<number> {
    if (!this.running) this.running = this.pass().finally(() => (this.running = null));
    return this.running;
  }

  private async pass(): Promise<number> {
    await this.ensureGroup();
    let entries: Entry[];
    try {
      entries = await this.read('0');
      if (!entries.length) entries = await this.claimAbandoned();
      if (!entries.length) entries = await this.read('>');
    } catch (e) {
      if (!(e instanceof OplogBufferGoneError)) throw e;
      // Redis lost the stream (and its group) or it was deleted: the group is made again at the next pass.
      this.groupReady = false;
      this.log.info({}, 'operator audit: buffer stream was gone in Redis; its consumer group is made again');
      return 0;
    }
    if (entries.length) {
      const records: { id: string; rec: OplogRecord }[] = [];
      const refused: QuarantineRow[] = [];
      for (const [id, fields] of entries) {
        if (!fields) continue; // deleted meanwhile (acknowledged below)
        const rec = parseRecord(valueOf(fields, 'r'));
        if (rec) records.push({ id, rec: storableRecord(rec) });
        else refused.push(this.refusal(id, fields, 'unreadable', 'not an operator-audit record'));
      }
      if (records.length) refused.push(...(await this.write(records, entries)));
      if (refused.length) {
        await insertQuarantine(this.db, refused);
        this.log.warn(
          {
            streamKey: this.buffer.name,
            count: refused.length,
            entries: refused.slice(0, 100).map((r) => r.entryId),
            errors: [...new Set(refused.map((r) => `${r.code} ${r.code === 'unreadable' || r.code === 'encoding' ? '' : logSafeMessage(r.message)}`.trim()))].slice(0, 20),
          },
          'operator audit: records quarantined (audit_quarantine)',
        );
      }
      const ids = entries.map(([id]) => id);
      await this.buffer.remove(OPLOG_GROUP, ids);
      this.written += records.length - refused.filter((r) => r.code !== 'unreadable').length;
    }
    await this.forgetDeadConsumers().catch(() => undefined);
    return entries.length;
  }

  private async ensureGroup(): Promise<void> {
    if (this.groupReady) return;
    await this.buffer.ensureGroup(OPLOG_GROUP);
    this.groupReady = true;
  }

  /** This consumer's pending entries (`0`) or new ones (`>`). Deleted entries come back with null fields. */
  private async read(from: '0' | '>'): Promise<Entry[]> {
    return this.buffer.read(OPLOG_GROUP, this.consumer, from === '0' ? 'pending' : 'new', BATCH);
  }

  /** Entries another consumer was handed and has not acknowledged for `claimIdleMs` ({@link OPLOG_CLAIM_IDLE_MS}). */
  private async claimAbandoned(): Promise<Entry[]> {
    return this.buffer.claimIdle(OPLOG_GROUP, this.consumer, this.claimIdleMs, BATCH);
  }

  /** Removes consumers of dead replicas (nothing pending, long idle), at most once a minute. */
  private async forgetDeadConsumers(): Promise<void> {
    const now = Date.now();
    if (now - this.lastForget < 60_000) return;
    this.lastForget = now;
    for (const c of await this.buffer.consumers(OPLOG_GROUP)) {
      if (c.name !== this.consumer && c.pending === 0 && c.idleMs > CONSUMER_FORGET_MS) {
        await this.buffer.deleteConsumer(OPLOG_GROUP, c.name);
      }
    }
  }

  /** What is kept of a refused entry: its raw fields, its reason. */
  private refusal(id: string, fields: string[], code: string, message: string): QuarantineRow {
    return { streamKey: this.buffer.name, entryId: id, queue: '', fields: storedFields(fields.map((f) => Buffer.from(f))), code, message };
  }

  /**
   * Writes `records` in one INSERT; when PostgreSQL refuses it for its data,
   * one by one, so that only the records it refuses are left out.
   * @returns the refused records (to quarantine): `encoding` (a value cannot be
   *   sent, e.g. a time past what a Date holds), a `data` SQLSTATE, or an
   *   `unknown` one met {@link UNKNOWN_STRIKES} passes in a row.
   * @throws when PostgreSQL is unavailable, or an `unknown` failure is not yet taken as the data's.
   */
  private async write(records: { id: string; rec: OplogRecord }[], entries: Entry[]): Promise<QuarantineRow[]> {
    const fieldsOf = new Map(entries.map(([id, f]) => [id, f ?? []]));
    // Entries another consumer took over leave their count behind: bounded, never a leak.
    if (this.strikes.size > 10_000) this.strikes.clear();
    const refused: QuarantineRow[] = [];
    const rows: { id: string; params: unknown[] }[] = [];
    for (const { id, rec } of records) {
      try {
        rows.push({ id, params: rowParams(rec) });
      } catch (e) {
        refused.push(this.refusal(id, fieldsOf.get(id)!, 'encoding', (e as Error).message));
      }
    }
    if (!rows.length) return refused;
    try {
      await this.insert(rows.map((r) => r.params));
      return refused;
    } catch (e) {
      if (batchFault(e) === 'unavailable') throw e;
    }
    for (const row of rows) {
      try {
        await this.insert([row.params]);
        this.strikes.delete(row.id);
      } catch (e) {
        const fault = batchFault(e);
        if (fault === 'unavailable') throw e;
        if (fault === 'unknown') {
          const n = (this.strikes.get(row.id) ?? 0) + 1;
          this.strikes.set(row.id, n);
          if (n < UNKNOWN_STRIKES) throw e;
        }
        this.strikes.delete(row.id);
        refused.push(this.refusal(row.id, fieldsOf.get(row.id)!, sqlState(e) ?? 'unknown', (e as Error).message));
      }
    }
    return refused;
  }

  private async insert(rows: unknown[][]): Promise<void> {
    const params: unknown[] = [];
    const values = rows.map((r) => {
      const base = params.length;
      params.push(...r);
      return `(${Array.from({ length: COLUMNS }, (_, i) => `$${base + i + 1}`).join(', ')})`;
    });
    await this.db.query(
      `INSERT INTO operator_audit (id, at, project, actor, actor_kind, action, target, method, path, status, address, request_id)
       VALUES ${values.join(', ')} ON CONFLICT (id) DO NOTHING`,
      params,
    );
  }

  /** Records waiting in Redis (not yet in PostgreSQL) and records dropped because the buffer was full (all replicas). */
  async bufferState(): Promise<{ buffered: number; dropped: number }> {
    return this.buffer.state();
  }
}

/**
 * The INSERT parameters of one record, in the column order of `operator_audit`.
 * @throws RangeError when `at` is no time a Date can hold.
 */
function rowParams(r: OplogRecord): unknown[] {
  return [r.id, new Date(r.at).toISOString(), r.project, r.actor, r.actorKind, r.action, r.target, r.method, r.path, r.status, r.address, r.requestId];
}

function valueOf(fields: string[], name: string): string | null {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return null;
}
