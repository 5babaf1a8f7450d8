import { RestoreStore, type QueueInspection, type RestoreJobInput, type RestoreJobsResult } from '../../core/ports/restore';
import type { RedisContext } from '../context';
import { installedKey, MIRROR_GROUP, queuesKey, restoringKey } from '../keys';

/** Ids read per ZRANGE page. */
const PAGE = 5000;

/** A flow job's field as lua/includes/flowspec.lua reads it: "flowId\npolicy\nref\ndependencies JSON", '' outside flows. */
export function flowField(f: RestoreJobInput['flow']): string {
  if (!f) return '';
  return `${f.flowId}\n${f.policy === 'run' ? 'r' : 'c'}\n${f.ref.replace(/\n/g, ' ')}\n${JSON.stringify(f.dependsOn)}`;
}

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
        j.createdAt, j.runAt, j.idempotencyKey ?? '', j.lastError ?? '', j.workerId ?? '', j.startedAt ?? '', j.failedAt ?? '', j.updatedAt, j.concurrencyKey ?? '',
        flowField(j.flow),
      );
    }
    const out = await this.ctx.scripts.run<(string | number)[]>(
      'restoreJobs',
      [k.waiting, k.delayed, k.failed, k.events, k.wake, k.meta, k.epoch, k.mirrorLock],
      args,
    );
    if (out[0] !== 'ok') return { status: out[0] as 'lock_lost' | 'already_restored' };
    const [, waiting, delayed, active, failed, cancelled, skipped, blocked] = out.map(Number);
    return { status: 'ok', waiting, delayed, active, failed, cancelled, skipped, blocked };
  }

  async inspect(queue: string): Promise<QueueInspection> {
    const k = this.ctx.keys(queue);
    const [epoch, last, vr, runId] = await this.ctx.scripts.run<string[]>('checkQueue', [k.epoch, k.events, k.meta], [MIRROR_GROUP]);
    return { epoch: epoch || null, lastDelivered: last || null, checkedOn: vr || null, runId };
  }

  async verify(queue: string, epoch: string, minDelivered: string | null, runId = ''): Promise<'ok' | 'changed'> {
    const k = this.ctx.keys(queue);
    return this.ctx.scripts.run<'ok' | 'changed'>('verifyQueue', [k.epoch, k.events, k.meta, k.wake], [epoch, MIRROR_GROUP, minDelivered ?? '', runId]);
  }

  async reset(queue: string, staleEpoch: string, lock: { token: string; ttlMs: number }): Promise<boolean> {
    const k = this.ctx.keys(queue);
    return (await this.ctx.scripts.run<number>('resetQueue', [k.epoch, k.meta, k.mirrorLock], [staleEpoch, lock.token, lock.ttlMs])) === 1;
  }

  async resetting(queue: string): Promise<boolean> {
    return (await this.ctx.redis.hget(this.ctx.keys(queue).meta, 'vr')) === 'resetting';
  }

  async jobIds(queue: string): Promise<string[]> {
    const k = this.ctx.keys(queue);
    const out: string[] = [];
    for (const set of [k.waiting, k.delayed, k.active, k.failed, k.blocked]) {
      for (let start = 0; ; start += PAGE) {
        const page = await this.ctx.redis.zrange(set, start, start + PAGE - 1);
        out.push(...page);
        if (page.length < PAGE) break;
      }
    }
    return [...new Set(out)];
  }

  prune(queue: string, lock: { token: string; ttlMs: number }, ids: string[]): Promise<number> {
    const k = this.ctx.keys(queue);
    return this.ctx.scripts.run<number>('pruneJobs', [k.waiting, k.delayed, k.active, k.failed, k.epoch, k.mirrorLock], [k.base, lock.token, lock.ttlMs, ...ids]);
  }

  async setRestoring(who: string, on: boolean, ttlMs = 60_000): Promise<void> {
    const key = restoringKey(this.ctx.prefix);
    if (on) {
      // One field per rebuilding process with its own end: one that finishes
      // does not end another's, and a process that dies mid-rebuild stops
      // counting after ttlMs.
      await this.ctx.redis.hset(key, who, String(Date.now() + ttlMs));
      await this.ctx.redis.pexpire(key, ttlMs);
    } else await this.ctx.redis.hdel(key, who);
  }

  async isRestoring(): Promise<boolean> {
    return (await this.state()).restoring;
  }

  async state(): Promise<{ restoring: boolean; installed: boolean }> {
    const now = Date.now();
    // Two keys of two slots (a Cluster refuses them in one MULTI): sent together.
    const [until, marker] = await Promise.all([this.ctx.redis.hvals(restoringKey(this.ctx.prefix)), this.ctx.redis.exists(installedKey(this.ctx.prefix))]);
    return { restoring: until.some((u) => Number(u) > now), installed: marker === 1 };
  }

  async markInstalled(): Promise<void> {
    await this.ctx.redis.set(installedKey(this.ctx.prefix), String(Date.now()));
  }
}
