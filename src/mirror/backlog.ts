import type { BacklogState, MirrorStream, QueueStore } from '../core/ports';

export type { BacklogState };

/**
 * Reads the backlog of the mirror (events written by the scripts that no
 * writer has mirrored yet) over every known queue.
 * @throws when Redis cannot be read.
 */
export async function readBacklog(stores: { queues: QueueStore; mirror: MirrorStream }): Promise<BacklogState> {
  return stores.mirror.backlog(await stores.queues.list());
}

/** The backlog numbers, ready to be exported as metrics (GET /metrics comes with the HTTP API). */
export interface BacklogMetrics {
  /** Gauge: audit events waiting in Redis (all streams), as of the last refresh. */
  pending: number;
  /** Gauge: age of the oldest waiting event, ms. */
  lagMs: number;
  /** Gauge: the bound (AUDIT_MAX_BACKLOG). */
  max: number;
  /** Gauge: 1 while enqueue is refused. */
  overLimit: boolean;
  /** Counter: enqueue calls refused since start. */
  refusedEnqueues: number;
  /** When the backlog was last read (epoch ms, this host's clock; 0 = never). */
  refreshedAt: number;
}

/**
 * Load shedding: refreshes the backlog every `intervalMs` and says whether
 * it is over `max` (strictly more pending events than `max`), so enqueue can
 * answer 503 instead of growing Redis without bound (or dropping history)
 * while PostgreSQL is away. Install it with
 * `jobs.setAdmission(() => guard.admit())`.
 *
 * The answer is as old as the last refresh (≤ intervalMs): a burst may take
 * the backlog past the bound by what is enqueued within one interval. When
 * Redis cannot be read the last answer stands (enqueue fails on its own then).
 */
export class BacklogGuard {
  private state: BacklogState = { pending: 0, lagMs: 0 };
  private timer?: NodeJS.Timeout;
  private over = false;
  private refreshing: Promise<BacklogState> | null = null;
  private refused = 0;
  private refreshedAt = 0;

  constructor(
    private readonly stores: { queues: QueueStore; mirror: MirrorStream },
    readonly max: number,
    private readonly onChange: (over: boolean, s: BacklogState) => void = () => undefined,
  ) {}

  /** Refreshes now, then every `intervalMs`. Resolves after the first refresh. */
  start(intervalMs = 1000): Promise<void> {
    this.stop();
    this.timer = setInterval(() => void this.refresh().catch(() => undefined), intervalMs);
    this.timer.unref?.();
    return this.refresh().then(
      () => undefined,
      () => undefined,
    );
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Reads the backlog once and updates the answer (a refresh already in
   * flight is joined, not doubled). Calls `onChange` when the answer flips.
   * @throws when Redis cannot be read (the last answer stands).
   */
  refresh(): Promise<BacklogState> {
    if (!this.refreshing) {
      this.refreshing = readBacklog(this.stores)
        .then((s) => {
          this.state = s;
          this.refreshedAt = Date.now();
          const over = s.pending > this.max;
          const changed = over !== this.over;
          this.over = over;
          if (changed) this.onChange(over, s);
          return s;
        })
        .finally(() => (this.refreshing = null));
    }
    return this.refreshing;
  }

  /**
   * The admission check for JobStore.setAdmission: null while the
   * backlog is within its bound, else why enqueue is refused (and counts the refusal).
   */
  admit(): string | null {
    if (!this.over) return null;
    this.refused++;
    return (
      `audit backlog over its bound: ${this.state.pending} events wait in Redis to be mirrored to PostgreSQL ` +
      `(AUDIT_MAX_BACKLOG=${this.max}); enqueue is refused until the audit writer catches up, retry later`
    );
  }

  get overLimit(): boolean {
    return this.over;
  }

  get current(): BacklogState {
    return this.state;
  }

  /** The numbers for GET /metrics (see {@link BacklogMetrics}). */
  get metrics(): BacklogMetrics {
    return { ...this.state, max: this.max, overLimit: this.over, refusedEnqueues: this.refused, refreshedAt: this.refreshedAt };
  }
}
