import { SluiceError } from '../core/errors';
import { Inject, Injectable } from '@nestjs/common';
import { SettingsKeeper } from './settings-keeper';
import { backoffProblem, BackoffSpec, DEFAULT_BACKOFF } from '../core/backoff';
import { ValidationError } from '../core/errors';
import { LIMITS } from '../core/job-options';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { HistoryQueries, QueueCounts } from '../history';
import { QueueSettings, QueueStore, type Fairness, type RateLimit } from '../core/ports';
import type { ConfigureQueueDto } from './dto/configure-queue.dto';
import { checkQueueName, QueueNotFoundError } from './queue-name';
import { bareQueue, inProject, qualify } from '../core/project-queue';
import { disablePayloadSearch, enablePayloadSearch, PayloadIndexState, payloadSearchStates } from './payload-search';

/** The API.md queue object (`external` is an addition). */
export interface ApiQueue {
  name: string;
  paused: boolean;
  maxConcurrency: number | null;
  rateLimit: { max: number; durationMs: number } | null;
  /** Effective defaults: the queue's own, else the process defaults (MAX_RETRIES, 600000 ms, exponential backoff). */
  defaults: { maxAttempts: number; backoff: BackoffSpec; timeoutMs: number };
  external: boolean;
  /** API.md v1.1 "Flow control per key": at most this many active jobs per key; null = none. */
  keyConcurrency: number | null;
  /** Starts per key per sliding window; null = none. */
  keyRateLimit: RateLimit | null;
  /** The effective fairness: as set, else round_robin once the queue has had keyed jobs, else fifo. */
  fairness: Fairness;
  /** Priority aging step, ms; null = none. */
  agingMs: number | null;
  /** API.md v1.3 "Failure summaries": the model may see this queue's payload values (never secret-keyed ones). */
  summaryIncludesPayload: boolean;
  counts: QueueCounts;
  /**
   * Payload search index of the queue (v1.1 console, additive): false when
   * off, else its state; absent when PostgreSQL could not be asked.
   */
  payloadSearch?: false | PayloadIndexState;
}

/**
 * Queue use cases behind `/queues`: list, read, configure, pause, resume,
 * each within the caller's project: a URL's bare name is qualified with it
 * (src/core/project-queue.ts), answers carry the bare name.
 * Settings live in the queue's Redis meta hash (QueueStore.configure), copied to PostgreSQL (SettingsKeeper);
 * counts are exact (HistoryQueries.queueCounts: live from Redis, terminal from Postgres).
 */
@Injectable()
export class QueuesService {
  constructor(
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    private readonly store: QueueStore,
    private readonly history: HistoryQueries,
    private readonly keeper: SettingsKeeper,
  ) {}

  /** Every queue of `project`, by name. */
  async list(project: string): Promise<ApiQueue[]> {
    const names = (await this.store.list()).filter((q) => inProject(q, project));
    const [settings, counts, search] = await Promise.all([
      Promise.all(names.map((n) => this.store.settings(n))),
      this.history.queueCounts(names),
      this.searchStates(names),
    ]);
    const out: ApiQueue[] = [];
    settings.forEach((s) => {
      if (s) out.push(this.render(s, counts[s.name], search));
    });
    return out;
  }

  /**
   * The queue `name` (bare) of `project`.
   * @throws QueueNotFoundError (404) unless the queue exists in that project.
   */
  async get(name: string, project: string): Promise<ApiQueue> {
    const qualified = LIMITS.queuePattern.test(name) ? qualify(project, name) : null;
    const s = qualified !== null ? await this.store.settings(qualified) : null;
    if (!s || qualified === null) throw new QueueNotFoundError(name);
    const [counts, search] = await Promise.all([this.history.queueCounts([qualified]), this.searchStates([qualified])]);
    return this.render(s, counts[qualified], search);
  }

  /** The payload-search states by qualified name, or null when PostgreSQL does not answer (the queue object then omits them). */
  private searchStates(names: string[]): Promise<Map<string, PayloadIndexState> | null> {
    return payloadSearchStates(this.history.db, names).catch(() => null);
  }

  /**
   * Applies the fields sent (creating the queue if new) and returns the queue.
   * A partial `defaults.backoff` is merged over the queue's current default backoff.
   * @throws ValidationError (400) for a bad name or an inconsistent backoff.
   */
  async configure(name: string, body: ConfigureQueueDto, project: string): Promise<ApiQueue> {
    const qualified = qualify(project, checkQueueName(name));
    let backoff: BackoffSpec | undefined;
    if (body.defaults?.backoff) {
      const current = (await this.store.settings(qualified))?.defaults.backoff ?? DEFAULT_BACKOFF;
      const given = Object.fromEntries(Object.entries(body.defaults.backoff).filter(([, v]) => v !== undefined));
      backoff = { ...current, ...given } as BackoffSpec;
      const problem = backoffProblem(backoff);
      if (problem) throw new ValidationError(`invalid defaults.backoff: ${problem}`, [{ path: 'defaults.backoff', message: problem }]);
    }
    const change = {
      maxConcurrency: body.maxConcurrency,
      rateLimit: body.rateLimit === null ? null : body.rateLimit ? { max: body.rateLimit.max, durationMs: body.rateLimit.durationMs } : undefined,
      external: body.external,
      defaults: body.defaults ? { maxAttempts: body.defaults.maxAttempts, timeoutMs: body.defaults.timeoutMs, backoff } : undefined,
      keyConcurrency: body.keyConcurrency,
      keyRateLimit: body.keyRateLimit === null ? null : body.keyRateLimit ? { max: body.keyRateLimit.max, durationMs: body.keyRateLimit.durationMs } : undefined,
      fairness: body.fairness,
      agingMs: body.agingMs,
      summaryIncludesPayload: body.summaryIncludesPayload,
    };
    // Redis first, then PostgreSQL's copy (src/queues/settings-keeper.ts).
    await this.keeper.change(qualified, () => this.store.configure(qualified, change));
    // The index's predicate and its bookkeeping name the qualified queue (src/queues/payload-search.ts).
    if (body.payloadSearch === true) await enablePayloadSearch(this.history.db, qualified);
    else if (body.payloadSearch === false) await disablePayloadSearch(this.history.db, qualified);
    return this.get(name, project);
  }

  /**
   * Pauses (true) or resumes (false) a queue. Pausing creates a queue that
   * does not exist yet (operators pause before traffic arrives); resuming one
   * does not (API.md: a queue exists once configured, paused or given a job).
   * @throws ValidationError (400) for a bad name; SluiceError not_found (404) on resume of an unknown queue.
   */
  async setPaused(name: string, paused: boolean, project: string): Promise<ApiQueue> {
    const qualified = qualify(project, checkQueueName(name));
    if (!paused && !(await this.store.settings(qualified))) throw new SluiceError('not_found', `queue ${name} not found`);
    await this.keeper.change(qualified, () => this.store.configure(qualified, { paused }));
    return this.get(name, project);
  }

  private render(s: QueueSettings, counts: QueueCounts | undefined, search: Map<string, PayloadIndexState> | null = null): ApiQueue {
    return {
      name: bareQueue(s.name),
      paused: s.paused,
      maxConcurrency: s.maxConcurrency,
      rateLimit: s.rateLimit,
      defaults: {
        maxAttempts: s.defaults.maxAttempts ?? this.config.maxRetries,
        backoff: s.defaults.backoff ?? { ...DEFAULT_BACKOFF },
        timeoutMs: s.defaults.timeoutMs ?? LIMITS.defaultTimeoutMs,
      },
      external: s.external,
      keyConcurrency: s.keyConcurrency,
      keyRateLimit: s.keyRateLimit,
      fairness: s.fairness,
      agingMs: s.agingMs,
      summaryIncludesPayload: s.summaryIncludesPayload,
      counts: counts ?? { waiting: 0, delayed: 0, active: 0, completed: 0, failed: 0, cancelled: 0 },
      ...(search ? { payloadSearch: search.get(s.name) ?? false } : {}),
    };
  }
}
