import type { Clock } from '../../../src/core/ports';
import type { RedisStores } from '../../../src/redis/stores';
import type { JobStore } from '../../../src/core/ports';
import { ScheduleInput, validateSchedule } from '../../../src/schedules/schedule-definition';
import { ScheduleMaterializer } from '../../../src/schedules/schedule-materializer';
import { ScheduleRepository, ScheduleRow } from '../../../src/schedules/schedule-repository';

/** A clock the test moves by hand. */
export class FakeClock implements Clock {
  constructor(public t: number) {}
  now(): number {
    return this.t;
  }
  set(iso: string | number): void {
    this.t = typeof iso === 'number' ? iso : Date.parse(iso);
  }
}

export const silentLog = { info: () => undefined, warn: () => undefined, debug: () => undefined };

let seq = 0;

/** Inserts a schedule the way SchedulesService.create does (nextRunAt = first slot after the clock's now). */
export async function createSchedule(repo: ScheduleRepository, clock: Clock, input: Partial<ScheduleInput> & { cron: string }): Promise<ScheduleRow> {
  const { def, slots } = validateSchedule({ name: `s${++seq}-${Math.random()}`, type: 'diag.echo', queue: 'sched', ...input }, 524_288);
  const id = `0190${Math.floor(Math.random() * 0xffff).toString(16).padStart(4, '0')}-0000-7000-8000-${(++seq).toString(16).padStart(12, '0')}`;
  return repo.insert(id, 'default', def, def.enabled ? slots.nextAfter(clock.now()) : null, clock.now());
}

/** A materializer on real Postgres/Redis with `clock`. */
export function materializer(repo: ScheduleRepository, store: JobStore, clock: Clock, opts: { leaseMs?: number; enqueue?: (j: any) => Promise<{ id: string }> } = {}): ScheduleMaterializer {
  return new ScheduleMaterializer({
    repo,
    enqueue: opts.enqueue ?? (async (j) => (await store.enqueue([j]))[0]),
    clock,
    log: silentLog,
    leaseMs: opts.leaseMs ?? 10_000,
    retryMs: 1000,
  });
}

/** The slot (ISO) of every job of `queue` made by schedule `id`, from the jobs' idempotency keys, sorted. */
export async function slotsOf(store: RedisStores, queue: string, id: string): Promise<string[]> {
  const ids = await store.ctx.redis.zrange(store.ctx.keys(queue).waiting, 0, -1);
  const out: string[] = [];
  for (const jobId of ids) {
    const job = await store.jobs.getJob(queue, jobId);
    const key = job?.idempotencyKey ?? '';
    if (key.startsWith(`schedule:${id}:`)) out.push(key.slice(`schedule:${id}:`.length));
  }
  return out.sort();
}
