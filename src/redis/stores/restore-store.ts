import { RestoreStore, type RestoreJobInput, type RestoreJobsResult } from '../../core/ports/restore';
import type { RedisContext } from '../context';
import { MIRROR_GROUP, queuesKey } from '../keys';

/** {@link RestoreStore} over each queue's `epoch` key and lua/restoreJobs-8.lua. */
export class RedisRestoreStore implements RestoreStore {
  constructor(private readonly ctx: RedisContext) {}

  epoch(queue: string): Promise<string | null> {
    return this.ctx.redis.get(this.ctx.keys(queue).epoch);
  }

  async createEpoch(queue: string, epoch: string): Promise<boolean> {
    return (await this.ctx.redis.set(this.ctx.keys(queue).epoch, epoch, 'NX')) === 'OK';
  }

  async relist(queue: string): Promise<void> {
    await this.ctx.redis.sadd(queuesKey(this.ctx.prefix), queue);
  }

  async restoreJobs(
    queue: string,
    lock: { token: string; ttlMs: number },
    opts: { epoch: string; minStreamId: string },
    jobs: RestoreJobInput[],
  ): Promise<RestoreJobsResult> {
    const k = this.ctx.keys(queue);
    const args: (string | number)[] = [k.base, lock.token, lock.ttlMs, opts.epoch, opts.minStreamId, MIRROR_GROUP];
    for (const j of jobs) {
      args.push(
        j.id, j.kind, j.type, j.payload, j.priority, `${j.maxAttempts};${j.timeoutMs};${j.backoff}`, j.attempts, j.executionSeq,
        j.createdAt, j.runAt, j.idempotencyKey ?? '', j.lastError ?? '', j.workerId ?? '', j.startedAt ?? '', j.failedAt ?? '', j.updatedAt,
      );
    }
    const out = await this.ctx.scripts.run<(string | number)[]>(
      'restoreJobs',
      [k.waiting, k.delayed, k.failed, k.events, k.wake, k.meta, k.epoch, k.mirrorLock],
      args,
    );
    if (out[0] !== 'ok') return { status: out[0] as 'lock_lost' | 'already_restored' };
    const [, waiting, delayed, active, failed, cancelled, skipped] = out.map(Number);
    return { status: 'ok', waiting, delayed, active, failed, cancelled, skipped };
  }
}
