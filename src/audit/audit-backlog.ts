import type { RedisClient } from '../redis/connection';
import type { RedisJobStore } from '../redis/redis-job-store';

/**
 * Size and age of the audit outbox: events written by the scripts that the
 * audit writer has not mirrored yet (XLEN: mirrored entries are XDEL'd).
 */
export interface BacklogState {
  /** Entries waiting in every queue's stream. */
  pending: number;
  /** Age of the oldest waiting entry, ms (0 when none). */
  lagMs: number;
}

/** Reads the backlog of every known queue (one XLEN and one XRANGE each, pipelined). */
export async function readBacklog(redis: RedisClient, store: RedisJobStore): Promise<BacklogState> {
  const queues = await store.listQueues();
  const rows = await Promise.all(
    queues.map(async (q) => {
      const key = store.keys(q).events;
      const [len, first] = await Promise.all([redis.xlen(key), redis.xrange(key, '-', '+', 'COUNT', 1)]);
      return { len, firstMs: first.length ? Number(first[0][0].split('-')[0]) : null };
    }),
  );
  const pending = rows.reduce((a, r) => a + r.len, 0);
  const oldest = rows.reduce<number | null>((a, r) => (r.firstMs !== null && (a === null || r.firstMs < a) ? r.firstMs : a), null);
  const [sec, usec] = await redis.time();
  const now = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
  return { pending, lagMs: oldest === null ? 0 : Math.max(0, now - oldest) };
}

/**
 * Load shedding: refreshes the backlog every `intervalMs` and says whether
 * it is over `max`, so enqueue can answer 503 instead of growing Redis
 * without bound (or dropping history) while PostgreSQL is away.
 */
export class BacklogGuard {
  private state: BacklogState = { pending: 0, lagMs: 0 };
  private timer?: NodeJS.Timeout;
  private over = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly store: RedisJobStore,
    private readonly max: number,
    private readonly onChange: (over: boolean, s: BacklogState) => void = () => undefined,
  ) {}

  start(intervalMs = 1000): void {
    const tick = async () => {
      try {
        this.state = await readBacklog(this.redis, this.store);
        const over = this.state.pending > this.max;
        if (over !== this.over) this.onChange(over, this.state);
        this.over = over;
      } catch {
        /* Redis unreachable: enqueue fails on its own */
      }
    };
    void tick();
    this.timer = setInterval(tick, intervalMs);
    this.timer.unref?.();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  get overLimit(): boolean {
    return this.over;
  }

  get current(): BacklogState {
    return this.state;
  }
}
