import { Injectable, Optional } from '@nestjs/common';
import { SettingsKeeper } from './settings-keeper';
import { ValidationError } from '../core/errors';
import { flowKeyProblem, LIMITS } from '../core/job-options';
import { QueueStore, type KeyLimits, type KeyStats, type QueueSettings } from '../core/ports';
import { qualify } from '../core/project-queue';
import { QueueNotFoundError } from './queue-name';

/**
 * One concurrency key of a queue as `GET /queues/:name/keys` and the key
 * routes answer it (API.md v1.1/v1.2 "Flow control per key"): its counts,
 * its override (null when it has none) and the limits in force for it —
 * each the override's field when set, else the queue's `keyConcurrency` /
 * `keyRateLimit` (null: no limit).
 */
export interface ApiQueueKey {
  key: string;
  waiting: number;
  active: number;
  overrides: KeyLimits | null;
  limits: KeyLimits;
}

/**
 * The per-key routes of a queue: list the busiest keys, set and remove one
 * key's override. Within the caller's project only, like every queue route:
 * the URL's bare queue name is qualified with the project
 * (src/core/project-queue.ts), so another project's queue, or a key of it,
 * is a queue this one does not have (404). Overrides live with the queue in
 * Redis (QueueStore.setKeyOverride), copied to PostgreSQL (SettingsKeeper); nothing here creates a queue.
 */
@Injectable()
export class QueueKeysService {
  private readonly keeper: SettingsKeeper;

  /** @param keeper copies overrides to PostgreSQL (absent: Redis alone, as in unit tests). */
  constructor(
    private readonly store: QueueStore,
    @Optional() keeper?: SettingsKeeper,
  ) {
    this.keeper = keeper ?? new SettingsKeeper(null, store);
  }

  /**
   * The keys of queue `name` of `project`, busiest first (QueueStore.keys), at most `limit`.
   * @throws QueueNotFoundError (404) unless the queue exists in that project.
   */
  async list(name: string, project: string, limit: number = LIMITS.defaultKeysListLimit): Promise<ApiQueueKey[]> {
    const { qualified, settings } = await this.queue(name, project);
    return (await this.store.keys(qualified, limit)).map((k) => render(k, settings));
  }

  /**
   * Sets (merges) the override of `key`: fields absent stay, null clears one.
   * @returns the key as {@link list} shows it.
   * @throws ValidationError (400, path `key`) for a key that is not 1..128
   *   characters; QueueNotFoundError (404) for an unknown queue.
   */
  async setOverride(name: string, key: string, change: Partial<KeyLimits>, project: string): Promise<ApiQueueKey> {
    checkKey(key);
    const { qualified, settings } = await this.queue(name, project);
    const overrides = await this.keeper.change(qualified, () => this.store.setKeyOverride(qualified, key, change));
    return render({ ...(await this.counts(qualified, key)), overrides }, settings);
  }

  /**
   * Removes the override of `key` (idempotent: a key without one answers the same).
   * @returns the key as {@link list} shows it, `overrides` null.
   * @throws as {@link setOverride}.
   */
  async deleteOverride(name: string, key: string, project: string): Promise<ApiQueueKey> {
    checkKey(key);
    const { qualified, settings } = await this.queue(name, project);
    await this.keeper.change(qualified, () => this.store.deleteKeyOverride(qualified, key));
    return render({ ...(await this.counts(qualified, key)), overrides: null }, settings);
  }

  /** The queue's qualified name and settings. @throws QueueNotFoundError for a bad name, another project's queue or none. */
  private async queue(name: string, project: string): Promise<{ qualified: string; settings: QueueSettings }> {
    const qualified = LIMITS.queuePattern.test(name) ? qualify(project, name) : null;
    const settings = qualified === null ? null : await this.store.settings(qualified);
    if (!settings || qualified === null) throw new QueueNotFoundError(name);
    return { qualified, settings };
  }

  /** One key's counts (QueueStore.keyCounts: exact, whatever its rank). */
  private async counts(queue: string, key: string): Promise<{ key: string; waiting: number; active: number }> {
    return { key, ...(await this.store.keyCounts(queue, key)) };
  }
}

/** A key of the URL: 1..128 characters (after URL decoding), like a job's concurrencyKey. */
function checkKey(key: string): void {
  const problem = flowKeyProblem(key);
  if (problem) throw new ValidationError(`invalid key: ${problem}`, [{ path: 'key', message: problem }]);
}

/** A key of the store as the API shows it: an override of two nulls is no override. */
function render(k: KeyStats, s: QueueSettings): ApiQueueKey {
  const o = k.overrides && (k.overrides.concurrency !== null || k.overrides.rateLimit !== null) ? k.overrides : null;
  return {
    key: k.key,
    waiting: k.waiting,
    active: k.active,
    overrides: o ? { concurrency: o.concurrency, rateLimit: o.rateLimit } : null,
    limits: { concurrency: o?.concurrency ?? s.keyConcurrency, rateLimit: o?.rateLimit ?? s.keyRateLimit },
  };
}
