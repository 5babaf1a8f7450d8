import type { DataSource, QueryRunner } from 'typeorm';
import { silentLogger as silent, type Logger } from '../core/logger';
import type { QueueConfigChange, QueueSnapshot, QueueStore } from '../core/ports';

/** What {@link SettingsKeeper.restoreAll} did. */
export interface SettingsRestoreReport {
  /** Queues whose settings PostgreSQL gave back to Redis. */
  restored: number;
  /** Queues whose settings were copied from Redis into PostgreSQL (changed while it was away, or kept before this copy existed). */
  saved: number;
  /** Queues whose step failed (logged; tried again at the next restore or change). */
  failed: number;
}

type Db = Pick<QueryRunner, 'query'>;

/** Longest wait for another process's change of the same queue, ms (then the change goes ahead and its copy is noted unsaved). */
const LOCK_WAIT_MS = 5000;

/**
 * Queue settings and key overrides kept in PostgreSQL (API.md v1.3 "Security
 * and recovery rules made exact": Redis holds nothing PostgreSQL cannot give
 * back). Redis stays the live store (the scripts read the queue's meta hash);
 * `queue_settings` and `queue_key_overrides` are a copy written after each
 * change and given back after Redis lost its data.
 *
 * Every change of a queue's settings runs through {@link change}, under the
 * queue's PostgreSQL advisory lock, so changes of one queue are serialized
 * across processes and the copy written last was read from Redis after the
 * last change: PostgreSQL ends with what Redis holds. Before the change, a
 * queue whose Redis settings are not `kept` (lost since) is given its copy
 * back first, so a partial change (`{"maxConcurrency": 5}`) does not land on
 * an empty meta hash and drop the rest.
 *
 * Without PostgreSQL (down, or a role without it) the change is applied to
 * Redis alone and the queue noted unsaved; the restore watch copies it later
 * ({@link saveUnsaved}). A Redis loss while PostgreSQL is down as well loses
 * those changes: the one window, said in docs/operations.md.
 */
export class SettingsKeeper {
  constructor(
    private readonly db: DataSource | null,
    private readonly store: QueueStore,
    private readonly log: Logger = silent,
  ) {}

  /**
   * Applies a change of `queue`'s settings (`apply` writes Redis) and writes
   * PostgreSQL's copy after it (see the class comment).
   * @returns what `apply` returned.
   * @throws what `apply` or Redis throws (nothing applied, or applied and the
   *   copy noted unsaved when only PostgreSQL failed after it).
   */
  async change<T>(queue: string, apply: () => Promise<T>): Promise<T> {
    return (await this.run(queue, apply)).out;
  }

  /** {@link change}, saying also whether PostgreSQL's copy was given back to Redis first. */
  private async run<T>(
    queue: string,
    apply: () => Promise<T>,
  ): Promise<{ out: T; gaveBack: boolean }> {
    const runner = await this.locked(queue);
    if (!runner) {
      const out = await apply();
      if (this.db) await this.noteUnsaved(queue, 'PostgreSQL could not be reached');
      return { out, gaveBack: false };
    }
    let done: { out: T } | null = null;
    let gaveBack = false;
    try {
      gaveBack = await this.giveBack(queue, runner);
      done = { out: await apply() };
      await this.write(queue, runner);
      await runner.commitTransaction();
      return { out: done.out, gaveBack };
    } catch (e) {
      await runner.rollbackTransaction().catch(() => undefined);
      if (!done) throw e;
      // The change is live in Redis: answered as done, its copy follows later.
      await this.noteUnsaved(queue, (e as Error).message);
      return { out: done.out, gaveBack };
    } finally {
      await runner.release().catch(() => undefined);
    }
  }

  /**
   * After Redis lost its data (or at the audit role's start): every queue
   * PostgreSQL keeps settings for gets them back unless Redis holds newer
   * ones, and every queue Redis holds that PostgreSQL has no copy of is copied
   * (settings kept in Redis before this copy existed). Queues come back in
   * the registry (an empty paused or external queue too).
   */
  async restoreAll(): Promise<SettingsRestoreReport> {
    const report: SettingsRestoreReport = { restored: 0, saved: 0, failed: 0 };
    if (!this.db) return report;
    const kept = new Set(
      ((await this.db.query(`SELECT queue FROM queue_settings`)) as { queue: string }[]).map(
        (r) => r.queue,
      ),
    );
    const names = [...new Set([...kept, ...(await this.store.list())])].sort();
    for (const queue of names) {
      try {
        // Marks Redis's settings as the truth (and lists the queue again): the copy is then written from them.
        const { gaveBack } = await this.run(queue, () => this.store.configure(queue, {}));
        if (gaveBack) report.restored++;
        else if (!kept.has(queue)) report.saved++;
      } catch (e) {
        report.failed++;
        this.log.warn(
          { queue, err: (e as Error).message },
          'queue settings: not restored now, tried again at the next check',
        );
      }
    }
    return report;
  }

  /** Copies the settings of queues changed while PostgreSQL was away. @returns how many were copied. */
  async saveUnsaved(): Promise<number> {
    if (!this.db) return 0;
    let n = 0;
    for (const queue of await this.store.unsaved()) {
      const runner = await this.locked(queue);
      if (!runner) break;
      try {
        await this.write(queue, runner);
        await runner.commitTransaction();
        await this.store.markUnsaved(queue, false);
        n++;
      } catch (e) {
        await runner.rollbackTransaction().catch(() => undefined);
        this.log.debug(
          { queue, err: (e as Error).message },
          'queue settings: copy to PostgreSQL still pending',
        );
      } finally {
        await runner.release().catch(() => undefined);
      }
    }
    return n;
  }

  /** A query runner in a transaction holding the queue's settings lock (released at commit or rollback), or null when PostgreSQL fails. */
  private async locked(queue: string): Promise<QueryRunner | null> {
    if (!this.db) return null;
    let runner: QueryRunner | null = null;
    try {
      runner = this.db.createQueryRunner();
      await runner.connect();
      await runner.startTransaction();
      // A holder stuck on Redis does not hold every other change of the queue for long.
      await runner.query(`SET LOCAL lock_timeout = '${LOCK_WAIT_MS}ms'`);
      await runner.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [
        `sluice.queue-settings:${queue}`,
      ]);
      return runner;
    } catch {
      await runner?.release().catch(() => undefined);
      return null;
    }
  }

  /** Gives PostgreSQL's copy back to Redis when Redis's settings are not kept. @returns true when it did. */
  private async giveBack(queue: string, db: Db): Promise<boolean> {
    const current = await this.store.snapshot(queue);
    if (current?.kept) return false;
    const [row] = (await db.query(`SELECT settings FROM queue_settings WHERE queue = $1`, [
      queue,
    ])) as { settings: QueueSnapshot['config'] }[];
    if (!row) return false;
    const overrides = (await db.query(
      `SELECT key, limits FROM queue_key_overrides WHERE queue = $1 ORDER BY key`,
      [queue],
    )) as QueueSnapshot['overrides'];
    // Overrides first: the configure call marks the settings kept, so a step cut short here is done again.
    for (const o of overrides) await this.store.setKeyOverride(queue, o.key, o.limits);
    await this.store.configure(queue, asChange(row.settings));
    return true;
  }

  /** Writes PostgreSQL's copy of the queue from what Redis holds now (nothing for a queue Redis does not know). */
  private async write(queue: string, db: Db): Promise<void> {
    const s = await this.store.snapshot(queue);
    if (!s) return;
    await db.query(
      `INSERT INTO queue_settings (queue, settings, updated_at) VALUES ($1, $2::jsonb, now())
       ON CONFLICT (queue) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at`,
      [queue, JSON.stringify(s.snapshot.config)],
    );
    await db.query(`DELETE FROM queue_key_overrides WHERE queue = $1`, [queue]);
    if (s.snapshot.overrides.length)
      await db.query(
        `INSERT INTO queue_key_overrides (queue, key, limits) SELECT $1, k, l::jsonb FROM unnest($2::text[], $3::text[]) AS o(k, l)`,
        [
          queue,
          s.snapshot.overrides.map((o) => o.key),
          s.snapshot.overrides.map((o) => JSON.stringify(o.limits)),
        ],
      );
  }

  private async noteUnsaved(queue: string, why: string): Promise<void> {
    await this.store.markUnsaved(queue, true);
    this.log.warn(
      { queue, err: why },
      'queue settings changed in Redis; the copy in PostgreSQL follows once it answers',
    );
  }
}

/** A kept snapshot as a configure change that sets exactly it (null removes what Redis may still hold). */
export function asChange(c: QueueSnapshot['config']): QueueConfigChange {
  return {
    paused: c.paused,
    external: c.external,
    maxConcurrency: c.maxConcurrency,
    rateLimit: c.rateLimit,
    defaults: {
      maxAttempts: c.defaults?.maxAttempts ?? null,
      backoff: c.defaults?.backoff ?? null,
      timeoutMs: c.defaults?.timeoutMs ?? null,
    },
    keyConcurrency: c.keyConcurrency,
    keyRateLimit: c.keyRateLimit,
    fairness: c.fairness,
    agingMs: c.agingMs,
    // Copies kept before the setting existed lack it: off.
    summaryIncludesPayload: c.summaryIncludesPayload ?? false,
  };
}
