import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { projectOf } from '../core/project-queue';
import type { SluiceConfig } from '../config/config';
import { LOGGER, SLUICE_CONFIG } from '../config/config.module';
import { RateLimitedError } from '../core/errors';
import type { Logger } from '../logging/logger';
import { QueueStore } from '../core/ports';

/** How often the projects' waiting jobs are counted, ms: the cap's answer is at most this old. */
export const WAITING_CAP_REFRESH_MS = 1000;

/**
 * PROJECT_MAX_WAITING (docs/security.md, "Limits per credential"): a project may hold at most that
 * many jobs not started yet (waiting, delayed or blocked in a flow, every queue of the project);
 * an enqueue that would go past it is refused with 429 `rate_limited`
 * (Retry-After 1 s) naming the cap, before anything is written.
 *
 * Not a scan per enqueue: the counts (ZCARDs per queue, pipelined) are read
 * every {@link WAITING_CAP_REFRESH_MS}, and the jobs this replica accepted since
 * are added to them, so the check is a sum in memory. The slack: jobs accepted
 * by other api replicas within one refresh are not seen yet (a project can go
 * past the cap by what the other replicas accept in one second), and jobs
 * claimed meanwhile free room only at the next refresh. An idempotent replay
 * counts until the next refresh. Off (0, the default): no timer, no check.
 * A queue's project is read from its qualified name (src/core/project-queue.ts);
 * the counts are kept per project.
 */
@Injectable()
export class WaitingCap implements OnModuleInit, OnApplicationShutdown {
  readonly max: number;
  private counted = new Map<string, number>();
  private readonly since = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private refreshing: Promise<void> | null = null;
  private lastWarn = 0;

  constructor(
    @Inject(SLUICE_CONFIG) config: SluiceConfig,
    private readonly queues: QueueStore,
    @Inject(LOGGER) private readonly log: Logger,
  ) {
    this.max = config.projectMaxWaiting;
  }


  async onModuleInit(): Promise<void> {
    if (this.max <= 0) return;
    this.timer = setInterval(() => void this.refresh().catch((e: Error) => this.warn(e)), WAITING_CAP_REFRESH_MS);
    this.timer.unref?.();
    await this.refresh().catch((e: Error) => this.warn(e));
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Counts every project's waiting and delayed jobs now (a refresh in flight is joined).
   * @throws when Redis cannot be read (the previous counts stand).
   */
  refresh(): Promise<void> {
    if (!this.refreshing) {
      const before = new Map(this.since);
      this.refreshing = (async () => {
        const queues = await this.queues.list();
        // Blocked flow jobs are not started yet either: a flow's 999 dependents must not escape the cap.
        const counts = await Promise.all(queues.map(async (q) => [await this.queues.liveCounts(q), await this.queues.blockedCount(q)] as const));
        const next = new Map<string, number>();
        queues.forEach((q, i) => {
          const p = projectOf(q);
          const [live, blocked] = counts[i];
          next.set(p, (next.get(p) ?? 0) + live.waiting + live.delayed + blocked);
        });
        this.counted = next;
        // What was accepted before the read started is in the counts now.
        for (const [p, n] of before) this.since.set(p, Math.max(0, (this.since.get(p) ?? 0) - n));
      })().finally(() => (this.refreshing = null));
    }
    return this.refreshing;
  }

  /**
   * Admits `n` new jobs into `project`, or refuses them all.
   * @throws RateLimitedError (429, Retry-After 1 s) when they would take the project past PROJECT_MAX_WAITING.
   */
  admit(project: string, n: number): void {
    if (this.max <= 0) return;
    const now = (this.counted.get(project) ?? 0) + (this.since.get(project) ?? 0);
    if (now + n > this.max) {
      throw new RateLimitedError(
        `project ${project} has ${now} jobs waiting, delayed or blocked; its cap is ${this.max} (PROJECT_MAX_WAITING): ${n} more refused, retry once workers have taken some`,
        WAITING_CAP_REFRESH_MS,
      );
    }
    this.since.set(project, (this.since.get(project) ?? 0) + n);
  }

  private warn(e: Error): void {
    if (Date.now() - this.lastWarn < 10_000) return;
    this.lastWarn = Date.now();
    this.log.warn({ err: e.message }, 'PROJECT_MAX_WAITING: cannot count waiting jobs now (the last counts stand)');
  }
}
