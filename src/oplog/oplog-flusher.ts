import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { Logger } from '../logging/logger';
import { OplogBufferGoneError, type OplogBuffer, type OplogEntry } from '../core/ports/oplog';
import { parseRecord, type OplogRecord } from './oplog-record';

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
 */
export class OplogFlusher {
  readonly consumer = `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  private stopped = true;
  private groupReady = false;
  private lastForget = 0;
  private lastWarn = 0;
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
      const records: OplogRecord[] = [];
      for (const [, text] of entries) {
        const rec = parseRecord(text);
        if (rec) records.push(rec);
      }
      if (records.length) await this.insert(records);
      if (records.length < entries.length) this.log.warn({ skipped: entries.length - records.length }, 'operator audit: unreadable buffered records skipped');
      const ids = entries.map(([id]) => id);
      await this.buffer.remove(OPLOG_GROUP, ids);
      this.written += records.length;
    }
    await this.forgetDeadConsumers().catch(() => undefined);
    return entries.length;
  }

  private async ensureGroup(): Promise<void> {
    if (this.groupReady) return;
    await this.buffer.ensureGroup(OPLOG_GROUP);
    this.groupReady = true;
  }

  /** This consumer's pending entries (`0`) or new ones (`>`). Deleted entries come back with a null record. */
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

  private async insert(records: OplogRecord[]): Promise<void> {
    const params: unknown[] = [];
    const rows = records.map((r) => {
      const base = params.length;
      params.push(r.id, new Date(r.at).toISOString(), r.project, r.actor, r.actorKind, r.action, r.target, r.method, r.path, r.status, r.address, r.requestId);
      return `(${Array.from({ length: 12 }, (_, i) => `$${base + i + 1}`).join(', ')})`;
    });
    await this.db.query(
      `INSERT INTO operator_audit (id, at, project, actor, actor_kind, action, target, method, path, status, address, request_id)
       VALUES ${rows.join(', ')} ON CONFLICT (id) DO NOTHING`,
      params,
    );
  }

  /** Records waiting in Redis (not yet in PostgreSQL) and records dropped because the buffer was full (all replicas). */
  async bufferState(): Promise<{ buffered: number; dropped: number }> {
    return this.buffer.state();
  }
}
