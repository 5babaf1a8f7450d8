import type { DataSource } from 'typeorm';
import type { LiveEvents, MirrorStream, QueueOwnership, QueueStore, StoreConnection } from '../core/ports';
import { jobChangesMessage } from './job-changes';
import { silentLogger as silent, type Logger } from '../core/logger';
import { sleep } from '../core/sleep';
import type { MirrorWriterMetrics } from './mirror-metrics';
import { batchMessage, planBatch, UNIQUE_VIOLATION } from './batch-writer';
import { isolate } from './isolate';
import { BatchMessage, sendBatch } from '../postgres/pg-batch';
import { batchFault, logSafeMessage, sqlState } from '../postgres/pg-errors';
import { MirrorBatch, entryFields, project, StreamEntry } from './projection';
import { logQuarantine, Refusal, writeQuarantine } from './quarantine';
import { compareIds } from '../core/stream-ids';

/** The stores a mirror writer uses (a RedisStores from createRedisStores fits). */
export interface MirrorStores {
  queues: QueueStore;
  mirror: MirrorStream;
  ownership: QueueOwnership;
  connection: StoreConnection;
  liveEvents: LiveEvents;
}

export interface MirrorWriterOptions {
  writerId: string;
  /** Max stream entries per Postgres transaction (≤ 1000; more is taken as 1000: lua/ackEvents-1.lua gets one batch's ids as arguments). */
  batchSize?: number;
  /** Max field text per transaction, chars (default 32 Mi): a batch of large payloads is cut short. */
  maxBatchChars?: number;
  /** Field text of one entry past which it is quarantined unwritten, chars (default MAX_ENTRY_CHARS, 64 Mi). */
  maxEntryChars?: number;
  /** Ownership lease of a queue's stream, ms; a dead writer's queues are taken over after it. */
  lockTtlMs?: number;
  /** The longest wait for new entries when every owned stream came back empty, ms (default IDLE_WAIT_MS; the wait ends as soon as one arrives). */
  idleMs?: number;
  /** Reads that came back short are at least this far apart, ms (default BATCH_PACE_MS; 0: read again at once). */
  batchPaceMs?: number;
  /** Keep finished jobs in Redis (-1 = delete once mirrored). */
  keepCompletedCount?: number;
  keepCompletedMs?: number;
  /**
   * Called when the writer takes a queue over, before it mirrors any of its
   * entries, with the queue's mirror lock held under `writerId` (the restore
   * check: src/restore/restore.ts). If it throws, the lock is released and the
   * queue is tried again on the next ownership round.
   */
  onAcquire?: (queue: string) => Promise<void>;
  /** Called after each batch written, with the age of its oldest entry (ms, in Redis time: entry ids carry it, and the host's clock offset is measured). */
  onBatch?: (lagMs: number) => void;
  /** Fed once per batch (src/mirror/mirror-metrics.ts). */
  metrics?: MirrorWriterMetrics;
  /** How often the writer takes back entries of its own whose acknowledgement was lost, ms (default ORPHAN_SWEEP_MS). */
  orphanSweepMs?: number;
  /** Pending this long, an entry of its own counts as one whose acknowledgement was lost, ms (default ORPHAN_IDLE_MS). */
  orphanIdleMs?: number;
}


/** A batch read and made ready for PostgreSQL: its projection, and the one message that writes it. */
interface Prepared {
  entries: StreamEntry[];
  batch: MirrorBatch;
  message: BatchMessage | null;
  /** Read with `>` (never delivered before): the message inserts with COPY, without ON CONFLICT (planBatch's `fresh`). */
  fresh: boolean;
  /** Entries read but not in this batch (over the size budget): they go first in the backlog. */
  rest: StreamEntry[];
  /** Projecting or encoding the batch threw (`message` is null): the writer isolates the entries that make it throw. */
  broken?: unknown;
}

/**
 * Default field text per batch (chars). The batch's script holds a payload
 * up to twice (event row and job row) and escaping can double it again:
 * 4 × 32 Mi chars stays well below V8's longest string (512 Mi chars) and,
 * at up to 3 UTF-8 bytes per char, below PostgreSQL's 1 GB message limit.
 */
const MAX_BATCH_CHARS = 32 * 2 ** 20;

/**
 * Field text of one entry past which it is quarantined unread (chars): its
 * statements would pass V8's longest string or PostgreSQL's 1 GB message
 * (a payload is held twice, escaping may double it, up to 3 bytes a char).
 */
const MAX_ENTRY_CHARS = 64 * 2 ** 20;

/**
 * Reads that came back short of a full batch are at least this far apart,
 * ms: between them the stream gathers what the next batch writes at once.
 * Each batch costs PostgreSQL a fixed price (planning its statements, the
 * commit, the counters' triggers) and the writer a read and an ack; and a
 * job's `claimed` and `completed` that land in one batch fold into one row
 * write of `jobs` and one execution row (projection.ts). Reading again the
 * moment a write ended made batches of ~50 entries under a steady load of
 * short jobs; paced, they hold what 20 ms brings. A full read is followed at
 * once (a backlog drains at full speed). The cost: the history of a quiet
 * queue trails Redis by up to this much more.
 */
const BATCH_PACE_MS = 20;

/** The longest idle wait for new entries between two ownership rounds, ms (MirrorStream.waitNew answers as soon as one arrives). */
const IDLE_WAIT_MS = 1000;

/** How often a writer looks for entries of its own whose acknowledgement was lost, ms. */
const ORPHAN_SWEEP_MS = 10_000;
/** Pending this long, an entry of the writer's own was written but its acknowledgement lost, ms. */
const ORPHAN_IDLE_MS = 30_000;

/** Failures in a row of the same batch with the same unclassified SQLSTATE after which it is taken as the data's (src/postgres/pg-errors.ts). */
const UNKNOWN_REPEATS = 3;

/**
 * Projects and encodes a batch, cut after `maxChars` of field text (at least
 * one entry). Never throws: when projecting or encoding throws, the batch
 * comes back `broken` (the writer then finds the entries that make it
 * throw), so nothing read is dropped. An entry of more than
 * `maxEntryChars` is rejected unwritten.
 */
function prepare(all: StreamEntry[], maxChars: number, fresh: boolean, maxEntryChars = MAX_ENTRY_CHARS): Prepared {
  let size = 0;
  let n = 0;
  let huge: StreamEntry[] | undefined;
  for (; n < all.length; n++) {
    const before = size;
    for (const k in all[n].fields) size += all[n].fields[k].length;
    if (size > maxChars && n > 0) break;
    if (size - before > maxEntryChars) (huge ??= []).push(all[n]);
  }
  const entries = all.slice(0, n);
  try {
    const batch = project(huge ? entries.filter((e) => !huge!.includes(e)) : entries);
    if (huge) for (const entry of huge) batch.rejected.push({ entry, reason: 'entry too large' });
    return { entries, batch, message: batch.events.length || batch.logs.length ? batchMessage(planBatch(batch, fresh)) : null, fresh, rest: all.slice(n) };
  } catch (broken) {
    return { entries, batch: project([]), message: null, fresh, rest: all.slice(n), broken };
  }
}

/**
 * One warn line per stream for the entries mirrored with a part left out
 * (MirrorBatch.warnings: a flow job's unreadable dependencies): the stream
 * key, the entry ids and the projection's reasons — never a field value.
 */
function logWarnings(log: Logger, eventsKeyOf: (queue: string) => string, warnings: MirrorBatch['warnings']): void {
  const byQueue = new Map<string, MirrorBatch['warnings']>();
  for (const w of warnings) {
    let l = byQueue.get(w.entry.queue);
    if (!l) byQueue.set(w.entry.queue, (l = []));
    l.push(w);
  }
  for (const [queue, ws] of byQueue) {
    log.warn(
      { streamKey: eventsKeyOf(queue), count: ws.length, entries: ws.slice(0, 100).map((w) => w.entry.id), reasons: [...new Set(ws.map((w) => w.reason))].slice(0, 20) },
      'audit writer: entries mirrored in part',
    );
  }
}

/** The ms part of the oldest entry id of a batch (entries come in stream order per queue, queue after queue). */
function oldestMs(entries: StreamEntry[]): number {
  let min = Infinity;
  for (let i = 0; i < entries.length; i++) {
    if (i > 0 && entries[i].queue === entries[i - 1].queue) continue;
    const id = entries[i].id;
    min = Math.min(min, Number(id.slice(0, id.indexOf('-'))));
  }
  return min;
}

/**
 * The `audit` role: mirrors every queue's events stream into PostgreSQL.
 *
 * - One consumer group (`sluice-audit`) per stream; new queues are found in
 *   the queue registry.
 * - Each queue's stream is mirrored by one writer at a time (a lease in Redis,
 *   renewed while held), so a job's events reach the projection in order;
 *   several writers share the queues. A writer taking over a queue first
 *   claims the entries its dead owner left pending (XAUTOCLAIM).
 * - Entries are read in batches (≤ batchSize, no waiting once something
 *   arrived), written in one transaction with one multi-row statement per
 *   table, then acknowledged and removed from the stream (lua/ackEvents-1.lua). Writes are idempotent (the stream entry id is
 *   unique in job_events), so a batch replayed after a crash adds nothing.
 * - When Postgres is down the transaction fails, nothing is acked, entries
 *   wait in Redis and are retried with backoff.
 * - When Postgres refuses a batch for its data, the batch is bisected: the
 *   rest is written in stream order, the entries it refuses are quarantined
 *   (src/mirror/quarantine.ts) and acknowledged, so no entry stops the mirror.
 * - Retention: once mirrored, completed/cancelled job hashes leave Redis.
 */
export class MirrorWriter {
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  private owned = new Set<string>();
  private groupsMade = new Set<string>();
  private ownershipCheckedAt = 0;
  /** Entries taken over from a dead writer, to be written before new ones. */
  private backlog: StreamEntry[] = [];
  private pgDown = false;
  /** The last failure of a batch with an unclassified SQLSTATE (first entry and code), and how many times in a row. */
  private unknownFailure = { key: '', times: 0 };
  /** `bisections`: isolations started (src/mirror/isolate.ts); `isolated`: batches that went in bisected. */
  readonly stats = { batches: 0, events: 0, lastBatchAt: 0, freshRetries: 0, quarantined: 0, isolated: 0, bisections: 0 };

  constructor(
    private readonly stores: MirrorStores,
    private readonly db: DataSource,
    private readonly opts: MirrorWriterOptions,
    private readonly log: Logger = silent,
  ) {}

  private unsubscribe: (() => void) | null = null;

  start(): void {
    this.running = true;
    // New queues are announced (QueueStore.register): take them over at
    // once instead of at the next ownership poll (≤ 1 s), so their history
    // shows up as quickly as that of known queues.
    this.unsubscribe = this.stores.mirror.onNewQueue(() => {
      this.ownershipCheckedAt = 0;
      this.waking?.abort();
    });
    this.loopDone = this.loop().catch((e) => this.log.error({ err: (e as Error).message }, 'audit writer loop crashed'));
  }

  /** Stops after the batch in progress; releases the queues it owned. */
  async stop(): Promise<void> {
    this.running = false;
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.waking?.abort();
    await this.loopDone;
    this.stores.mirror.closeWait();
    await Promise.all([...this.owned].map((q) => this.stores.ownership.release(q, this.opts.writerId)));
    this.owned.clear();
  }

  /**
   * Runs until stopped: claim queues, read, write, ack. Pipelined: the next
   * batch is read from Redis, projected and encoded (Node's share of the
   * work, about as much CPU as PostgreSQL's), and the previous one
   * acknowledged, while the current one is written to PostgreSQL.
   */
  private async loop(): Promise<void> {
    let failures = 0;
    let acking: Promise<void> = Promise.resolve();
    while (this.running) {
      try {
        if (Date.now() - this.ownershipCheckedAt >= this.ownershipIntervalMs()) {
          await acking; // a takeover must see this writer's acks done
          await this.refreshOwnership();
        }
        const next = await this.nextBatch(true);
        if (!next.entries.length) {
          await this.idle();
          continue;
        }
        const { entries } = next;
        // Read and prepare ahead while this batch goes to PostgreSQL — unless
        // a read-ahead is still pending (the backlog was served first: it
        // must not be replaced, its entries would stay pending unwritten) or
        // the backlog has more to write first.
        if (!this.prefetch && !this.backlog.length) {
          this.prefetch = this.read().then((e) => this.prepareBatch(this.withCarry(e, true), true));
          // Its failure is met where it is awaited (nextBatch, write, stop) — but the
          // loop may fail first (the ownership round, with Redis gone) and sleep:
          // left without a handler meanwhile, the rejection would end the process.
          this.prefetch.catch(() => undefined);
        }
        const written = await this.write(next);
        this.announce(written);
        failures = 0;
        const prev = acking;
        acking = prev.then(() => this.acknowledge(entries, written)).catch((e) => {
          // Still pending: write them again (idempotent) and ack on the next round.
          this.backlog.push(...entries);
          this.log.warn({ err: (e as Error).message }, 'audit ack failed: retrying the batch');
        });
      } catch (e) {
        failures++;
        if (!this.pgDown) {
          // A message PostgreSQL sent may quote a value: only its log-safe part.
          const code = sqlState(e);
          this.log.warn({ err: code ? logSafeMessage((e as Error).message) : (e as Error).message, code }, 'audit batch failed: events stay in Redis, retrying');
        }
        this.pgDown = true;
        await sleep(Math.min(100 * 2 ** Math.min(failures, 5), 2000));
      }
    }
    await acking;
    const f = this.prefetch ? await this.prefetch.catch(() => null) : null;
    if (f) this.backlog.push(...f.entries, ...f.rest);
    this.dropCarry();
  }

  /** Ends the idle wait early (stop, a new queue). */
  private waking: AbortController | null = null;

  /**
   * Every owned stream came back with nothing new: wait for the next entry
   * (MirrorStream.waitNew: one blocking read over all of them) until the next
   * ownership round at most, instead of reading every queue again every few
   * ms. With `idleMs` the wait is at most that long (tests stepping the writer).
   */
  private async idle(): Promise<void> {
    // Stopped since the loop's check (stop() found no wait to end): no new wait.
    if (!this.running) return;
    const round = this.ownershipCheckedAt + this.ownershipIntervalMs() - Date.now();
    const ms = Math.min(round, this.opts.idleMs ?? IDLE_WAIT_MS);
    if (ms < 1) return;
    this.waking = new AbortController();
    try {
      await this.stores.mirror.waitNew([...this.owned], ms, this.waking.signal);
    } finally {
      this.waking = null;
    }
  }

  /** How often the writer checks which queues it owns, ms. */
  private ownershipIntervalMs(): number {
    return Math.min(1000, (this.opts.lockTtlMs ?? 5000) / 3);
  }

  /** Entries per batch, 1..1000 whatever the option says (the ack script takes one batch's ids as arguments). */
  private batchSize(): number {
    return Math.min(1000, Math.max(1, Math.floor(this.opts.batchSize ?? 1000)));
  }

  /** `fresh`: the entries come straight from a `>` read (not the backlog: a retry or a takeover). */
  private prepareBatch(entries: StreamEntry[], fresh: boolean): Prepared {
    return prepare(entries, this.opts.maxBatchChars ?? MAX_BATCH_CHARS, fresh, this.opts.maxEntryChars);
  }

  /** The next batch, being read and prepared while the current one is written. */
  private prefetch: Promise<Prepared> | null = null;

  /** The batch to write next: the retry backlog first, then what was read ahead, then a fresh read (`hold`: see {@link withCarry}). */
  private async nextBatch(hold = false): Promise<Prepared> {
    let p: Prepared;
    if (this.backlog.length) p = this.prepareBatch(this.backlog.splice(0, this.batchSize()), false);
    else if (this.prefetch) {
      const f = this.prefetch;
      this.prefetch = null;
      p = await f;
    } else p = this.prepareBatch(this.withCarry(await this.read(), hold), true);
    if (p.rest.length) this.backlog.unshift(...p.rest);
    return p;
  }

  /**
   * Writes one batch in one transaction, and quarantines what cannot be
   * written (src/mirror/quarantine.ts). On failure keeps it (and anything
   * read ahead) for the retry, in order.
   *
   * When PostgreSQL refuses the batch for its data (src/postgres/pg-errors.ts:
   * a data exception, a NOT NULL column left null, an index row too large —
   * or an unclassified error the same batch met UNKNOWN_REPEATS times in a
   * row) the batch is bisected (src/mirror/isolate.ts): the entries
   * PostgreSQL takes are written in stream order, the ones it refuses
   * alone are quarantined, and all are acknowledged. When PostgreSQL is
   * unavailable nothing is quarantined: the batch waits in Redis.
   * @returns the projection of what was written (its `finished` jobs leave Redis on acknowledgement).
   * @throws when PostgreSQL or Redis is unavailable (nothing acked: the batch is retried).
   */
  private async write(p: Prepared): Promise<MirrorBatch> {
    const { entries, batch, message, fresh } = p;
    let written = batch;
    let refused: Refusal[] = batch.rejected.length ? batch.rejected.map((r) => ({ entry: r.entry, code: 'projection', message: r.reason })) : [];
    let isolated = false;
    try {
      // One implicit transaction, one round trip (see sendBatch).
      let failed: unknown;
      if (p.broken !== undefined) failed = p.broken;
      else if (message) {
        try {
          await sendBatch(this.db, message);
        } catch (e) {
          failed = e;
        }
      }
      if (failed !== undefined) {
        if (p.broken === undefined && !this.isDataFault(failed, entries)) throw failed;
        // Nothing was written. The fresh form (COPY) is tried again in the
        // idempotent form first: it met a row that exists (Redis restarted
        // from an older snapshot and delivers mirrored entries again), or
        // refused a value the array literals carry (COPY's text input and
        // the literals are two encodings of the same rows).
        const known = p.broken !== undefined ? undefined : { batch, error: fresh ? undefined : failed };
        this.stats.bisections++;
        const iso = await isolate(this.db, entries, known);
        const byPg = iso.refused.filter((r) => r.code !== 'projection');
        if (byPg.length && byPg.every((r) => r.fault === 'unknown') && !iso.written.length) throw failed; // nothing goes in: PostgreSQL's, not the data's
        if (byPg.length || p.broken !== undefined) {
          isolated = true;
          this.stats.isolated++;
          written = project(iso.written);
        } else {
          const code = sqlState(failed) ?? '';
          if (code !== UNIQUE_VIOLATION && !this.stats.freshRetries) {
            this.log.warn({ err: logSafeMessage((failed as Error).message), code }, 'audit writer: a fresh batch was refused, written in the idempotent form');
          }
          this.stats.freshRetries++;
        }
        refused = iso.refused;
      }
      if (refused.length) {
        await writeQuarantine(this.db, this.stores.mirror, refused);
        logQuarantine(this.log, (q) => this.stores.mirror.streamName(q), refused);
        this.stats.quarantined += refused.length;
      }
    } catch (e) {
      this.opts.metrics?.failure();
      const f = this.prefetch ? await this.prefetch.catch(() => null) : null;
      this.prefetch = null;
      // Per queue, what the backlog holds (this batch's overflow, a retried
      // batch) was read before the read-ahead: the batch first, the
      // read-ahead last.
      this.backlog.unshift(...entries);
      if (f) this.backlog.push(...f.entries, ...f.rest);
      this.dropCarry();
      throw e;
    }
    if (written.warnings.length) logWarnings(this.log, (q) => this.stores.mirror.streamName(q), written.warnings);
    this.unknownFailure.times = 0;
    if (this.pgDown) {
      this.pgDown = false;
      this.log.info({}, 'audit writer: postgres is back, mirroring resumed');
    }
    this.stats.batches++;
    this.stats.events += entries.length;
    this.stats.lastBatchAt = Date.now();
    this.opts.metrics?.batch(entries.length, refused.length, isolated);
    if (this.opts.onBatch && entries.length) this.opts.onBatch(this.stats.lastBatchAt + this.redisClockOffsetMs - oldestMs(entries));
    return written;
  }

  /**
   * Whether PostgreSQL's refusal of the batch is about its data (see
   * src/postgres/pg-errors.ts): a data error at once; an unclassified SQLSTATE
   * once the same batch (same first entry) failed with it UNKNOWN_REPEATS
   * times in a row; never when PostgreSQL is unavailable.
   */
  private isDataFault(e: unknown, entries: StreamEntry[]): boolean {
    const fault = batchFault(e);
    if (fault !== 'unknown') return fault === 'data';
    const key = `${entries[0]?.queue}\n${entries[0]?.id}\n${sqlState(e)}`;
    if (this.unknownFailure.key === key) this.unknownFailure.times++;
    else this.unknownFailure = { key, times: 1 };
    return this.unknownFailure.times >= UNKNOWN_REPEATS;
  }

  /**
   * Reads, writes and acknowledges one batch (no read-ahead). Returns the
   * number of entries written. Used by tests to step the writer.
   * @throws when Postgres or Redis fails (nothing acked: the batch is retried).
   */
  async runOnce(): Promise<number> {
    const next = await this.nextBatch();
    if (!next.entries.length) return 0;
    const written = await this.write(next);
    this.announce(written);
    await this.acknowledge(next.entries, written);
    return next.entries.length;
  }

  /** Entries held out of the last fresh batch (see {@link withCarry}): written first with the next one. */
  private carry: StreamEntry[] = [];

  /**
   * The entries of the next fresh batch: what was held out of the previous
   * one, then `read`. With `hold` (the writer's loop; not runOnce),
   * the `claimed` entry that is a job's last in `read` is held out in turn,
   * for the next batch: a short job's `completed` comes within milliseconds,
   * so its `claimed` and `completed` then land in one batch — one row write of
   * `jobs` and one whole execution row instead of two updates and an
   * execution started, then finished (scripts/bench/write-models.js: 74 against
   * 46 µs of PostgreSQL per job; at 12,000 jobs/s 40 % of the jobs straddled a
   * paced batch's boundary, 0.5 % with holding: docs/benchmarks.md). An entry is held once: the next batch
   * writes it whatever comes, and a read that brings nothing flushes it, so the
   * history trails by at most one more batch ({@link BATCH_PACE_MS}). Held
   * entries are read but not acknowledged: a crash leaves them pending, taken
   * back like any unwritten entry (takeOver).
   */
  private withCarry(read: StreamEntry[], hold: boolean): StreamEntry[] {
    const held = this.carry;
    this.carry = [];
    if (!hold || !read.length || (this.opts.batchPaceMs ?? BATCH_PACE_MS) <= 0) return held.length ? [...held, ...read] : read;
    const last = new Map<string, number>();
    for (let i = 0; i < read.length; i++) {
      const j = read[i].fields.j;
      if (j !== undefined) last.set(j, i);
    }
    const out: StreamEntry[] = [...held];
    for (let i = 0; i < read.length; i++) {
      const e = read[i];
      if (e.fields.e === 'claimed' && last.get(e.fields.j) === i) this.carry.push(e);
      else out.push(e);
    }
    return out;
  }

  /** Puts held entries into the retry backlog (a write failed, or the writer stops). */
  private dropCarry(): void {
    if (!this.carry.length) return;
    this.backlog.push(...this.carry);
    this.carry = [];
  }

  /** When the last read started (ms) and whether it came back full: {@link BATCH_PACE_MS}. */
  private lastRead = { at: 0, full: false };

  /** Reads so far: which queue's share gets the budget's remainder turns with it. */
  private reads = 0;

  /**
   * The next read: up to batchSize entries less what is held (withCarry puts
   * those into the same batch), split over the owned queues so the shares add
   * up to exactly that (the first `budget mod queues` of them, turning, take
   * one more). Nothing to read for when the held entries fill a batch: they go
   * alone.
   */
  private async read(): Promise<StreamEntry[]> {
    const queues = [...this.owned];
    if (!queues.length) return [];
    const budget = this.batchSize() - this.carry.length;
    if (budget <= 0) {
      this.lastRead.full = true;
      return [];
    }
    const wait = this.lastRead.at + (this.opts.batchPaceMs ?? BATCH_PACE_MS) - Date.now();
    if (wait > 0 && !this.lastRead.full) await sleep(wait);
    this.lastRead.at = Date.now();
    const base = Math.floor(budget / queues.length);
    const extra = budget % queues.length;
    const turn = this.reads++ % queues.length;
    const shares = queues.map((_, i) => base + ((i - turn + queues.length) % queues.length < extra ? 1 : 0));
    // Settled one by one: an XREADGROUP that answered has delivered its entries (they are pending under this
    // writer now), whatever another queue's read did. Dropped with the round, they were written only once taken
    // back (takeOver, sweepOrphans), after the queue's newer entries: a job's row then missed the patches written
    // before its insert (the third probe: jobs `waiting` whose timeline says `completed`, after a FLUSHALL left one
    // queue's consumer group missing while another's was back).
    const settled = await Promise.allSettled(queues.map((q, i) => (shares[i] > 0 ? this.stores.mirror.readNew(q, this.opts.writerId, shares[i]) : [])));
    const out: StreamEntry[] = [];
    let failure: unknown = null;
    let read = 0;
    settled.forEach((r, i) => {
      if (r.status === 'rejected') {
        failure ??= r.reason;
        this.readFailed(queues[i], r.reason);
        return;
      }
      read++;
      if (this.failingReads.delete(queues[i])) this.log.info({ queue: queues[i] }, 'audit writer: reading the queue works again');
      for (const { id, fields } of r.value) out.push({ queue: queues[i], id, fields: entryFields(fields) });
    });
    // Nothing read at all (Redis away): the loop's backoff, as before — unless entries are held
    // (withCarry): they go now, alone. Held until a read answers again, they would land after a
    // restore that answer waited for (Redis lost the streams: their consumer groups are made again by
    // the restore) read PostgreSQL: newer than the state it rebuilt, and its check would take the
    // queue for rewound (PostgreSQL ahead of the group it had just made).
    if (!read && failure !== null && !this.carry.length) throw failure;
    this.lastRead.full = settled.some((r, i) => r.status === 'fulfilled' && shares[i] > 0 && r.value.length >= shares[i]);
    return out;
  }

  /** Queues whose last read failed (a failure is logged once until the queue reads again). */
  private failingReads = new Set<string>();

  /** A queue's read failed while others answered: logged at warn once; the queue is read again next round. */
  private readFailed(queue: string, e: unknown): void {
    if (this.failingReads.has(queue)) return;
    this.failingReads.add(queue);
    this.log.warn({ queue, err: (e as Error)?.message }, 'audit writer: reading a queue failed, its entries stay in Redis; the others go on');
  }

  private async acknowledge(entries: StreamEntry[], batch = project(entries)): Promise<void> {
    const byQueue = new Map<string, string[]>();
    for (const e of entries) {
      let l = byQueue.get(e.queue);
      if (!l) byQueue.set(e.queue, (l = []));
      l.push(e.id);
    }
    const finished = batch.finished;
    await Promise.all(
      [...byQueue].map(async ([q, ids]) => {
        await this.stores.mirror.ack(q, ids);
      }),
    );
    const done = new Map<string, string[]>();
    for (const f of finished) {
      let l = done.get(f.queue);
      if (!l) done.set(f.queue, (l = []));
      l.push(f.jobId);
    }
    await Promise.all(
      [...done].map(([q, ids]) => this.stores.mirror.forgetFinished(q, ids, this.opts.keepCompletedCount ?? -1, this.opts.keepCompletedMs ?? -1)),
    );
  }

  /** Some API process has live-update listeners (the key, checked at each ownership round, ≤ 1 s). */
  private liveListeners = false;

  /**
   * Publishes the jobs a committed batch changed (src/mirror/job-changes.ts)
   * for the console's live updates (src/dashboard/live/), only while an API
   * process has listeners: no cost otherwise. After the commit, so a client
   * that refetches on the notice sees the change in PostgreSQL. Fire and
   * forget: a lost notice costs a client one refresh (it polls as a fallback).
   */
  private announce(batch: MirrorBatch): void {
    if (!this.liveListeners) return;
    const msg = jobChangesMessage(batch);
    if (msg !== null) this.stores.liveEvents.publish(msg).catch(() => undefined);
  }

  /** Redis's clock minus this host's (ms), measured at each ownership round: entry ids carry Redis time. */
  private redisClockOffsetMs = 0;

  /** Creates missing consumer groups, takes free queues, renews held ones. */
  private async refreshOwnership(): Promise<void> {
    this.ownershipCheckedAt = Date.now();
    if (this.opts.onBatch) {
      this.redisClockOffsetMs = (await this.stores.connection.serverTime()) - Date.now();
    }
    this.liveListeners = await this.stores.liveEvents.hasListeners();
    const ttl = this.opts.lockTtlMs ?? 5000;
    // History reads wait for a queue nobody holds yet only while a writer runs (src/history/mirror-barrier.ts).
    await this.stores.ownership.markRunning(this.opts.writerId, ttl);
    for (const q of await this.stores.queues.list()) {
      if (!this.groupsMade.has(q)) {
        await this.stores.mirror.ensureGroup(q);
        this.groupsMade.add(q);
      }
      if (this.owned.has(q)) {
        if (!(await this.stores.ownership.renew(q, this.opts.writerId, ttl))) {
          this.owned.delete(q);
          this.log.warn({ queue: q }, 'audit writer lost the ownership of a queue');
        }
      } else if (await this.stores.ownership.take(q, this.opts.writerId, ttl)) {
        if (!(await this.prepare(q))) continue;
        this.owned.add(q);
        await this.takeOver(q);
      }
    }
    await this.sweepOrphans();
  }

  /**
   * Before mirroring a queue just taken: (re)creates the consumer group (Redis
   * may have lost it since it was first made) and runs the onAcquire hook.
   * Returns false, with the lock released, when the hook failed.
   */
  private async prepare(queue: string): Promise<boolean> {
    await this.stores.mirror.ensureGroup(queue);
    if (!this.opts.onAcquire) return true;
    try {
      await this.opts.onAcquire(queue);
      return true;
    } catch (e) {
      this.log.warn({ queue, err: (e as Error).message }, 'audit writer: queue check failed, will retry');
      await this.stores.ownership.release(queue, this.opts.writerId);
      return false;
    }
  }

  /**
   * Claims every entry left pending in the group by earlier owners
   * (XAUTOCLAIM) — or, with `minIdleMs`, by this writer itself and pending for
   * that long: entries whose acknowledgement never landed (it went to a
   * master that a failover then demoted, see sweepOrphans). Entries the
   * backlog holds already are not added twice.
   */
  private async takeOver(queue: string, minIdleMs = 0): Promise<void> {
    let cursor = '0-0';
    const taken: StreamEntry[] = [];
    const held = minIdleMs ? new Set([...this.backlog, ...this.carry].filter((e) => e.queue === queue).map((e) => e.id)) : null;
    do {
      const r = await this.stores.mirror.claimPending(queue, this.opts.writerId, cursor, minIdleMs);
      cursor = r.cursor;
      for (const { id, fields } of r.entries) if (!held?.has(id)) taken.push({ queue, id, fields: entryFields(fields) });
    } while (cursor !== '0-0');
    if (taken.length) {
      taken.sort((a, b) => compareIds(a.id, b.id));
      this.backlog.push(...taken);
      this.log.info({ queue, entries: taken.length }, minIdleMs ? 'audit writer took back entries whose acknowledgement was lost' : 'audit writer took over pending entries');
    }
  }

  private orphansSweptAt = Date.now();

  /**
   * Every orphanSweepMs (while PostgreSQL is up), takes back the entries of
   * its queues pending for more than orphanIdleMs: a batch's entries are
   * acknowledged within milliseconds of their commit, so such entries are
   * ones whose acknowledgement was lost (a Redis failover between the write
   * and the ack) — left alone they would stay pending for good and every
   * read-your-writes history query would wait for them. Written again
   * (idempotent) and acknowledged.
   */
  private async sweepOrphans(): Promise<void> {
    if (this.pgDown || Date.now() - this.orphansSweptAt < (this.opts.orphanSweepMs ?? ORPHAN_SWEEP_MS)) return;
    this.orphansSweptAt = Date.now();
    for (const q of this.owned) await this.takeOver(q, this.opts.orphanIdleMs ?? ORPHAN_IDLE_MS);
  }
}
