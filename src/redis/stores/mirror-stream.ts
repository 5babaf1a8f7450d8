import { MirrorStream, QueueOwnership, type BacklogState, type RawStreamEntry } from '../../core/ports/mirror';
import { compareIds, nextStreamId } from '../../core/stream-ids';
import type { RedisClient } from '../connection';
import type { RedisContext } from '../context';
import { MIRROR_GROUP, mirrorWritersKey, newQueueChannel } from '../keys';
import { MirrorDoorbell } from './mirror-doorbell';

type XEntries = [string, string[]][];

/**
 * {@link QueueOwnership} over each queue's `auditlock` key: SET NX PX to take
 * it, lua/renewLock-1.lua and lua/releaseLock-1.lua (compare-and-set) to keep
 * and drop it.
 */
export class RedisQueueOwnership implements QueueOwnership {
  constructor(private readonly ctx: RedisContext) {}

  async take(queue: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.ctx.redis.set(this.ctx.keys(queue).mirrorLock, owner, 'PX', ttlMs, 'NX')) === 'OK';
  }

  async renew(queue: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.ctx.scripts.run<number>('renewLock', [this.ctx.keys(queue).mirrorLock], [owner, ttlMs])) === 1;
  }

  async release(queue: string, owner: string): Promise<void> {
    await this.ctx.scripts.run('releaseLock', [this.ctx.keys(queue).mirrorLock], [owner]).catch(() => undefined);
  }

  holder(queue: string): Promise<string | null> {
    return this.ctx.redis.get(this.ctx.keys(queue).mirrorLock);
  }

  async markRunning(owner: string, ttlMs: number): Promise<void> {
    await this.ctx.redis.set(mirrorWritersKey(this.ctx.prefix), owner, 'PX', ttlMs);
  }
}

/**
 * {@link MirrorStream} over each queue's `events` stream and the consumer
 * group {@link MIRROR_GROUP}.
 */
export class RedisMirrorStream implements MirrorStream {
  private readonly doorbell: MirrorDoorbell;

  /** @param connect opens the idle writer's blocking connection (default: a duplicate of the shared one). */
  constructor(
    private readonly ctx: RedisContext,
    connect: (name: string) => RedisClient = () => ctx.redis.duplicate() as RedisClient,
  ) {
    this.doorbell = new MirrorDoorbell(ctx.redis, connect, (q) => ctx.keys(q).events);
  }

  private get redis(): RedisClient {
    return this.ctx.redis;
  }

  async ensureGroup(queue: string): Promise<void> {
    await this.redis.xgroup('CREATE', this.ctx.keys(queue).events, MIRROR_GROUP, '0', 'MKSTREAM').catch((e: Error) => {
      if (!/BUSYGROUP/.test(e.message)) throw e;
    });
  }

  async readNew(queue: string, consumer: string, count: number): Promise<RawStreamEntry[]> {
    // Behind the restore fence (lua/readEvents-2.lua): nothing while the queue awaits its check after a Redis restart.
    const k = this.ctx.keys(queue);
    // Nothing new (or fenced): the stream's newest id, for waitNew.
    const r = (await this.ctx.scripts.run('readEvents', [k.events, k.meta], [MIRROR_GROUP, consumer, count])) as [string, XEntries][] | string;
    if (typeof r === 'string') {
      this.doorbell.saw(queue, r);
      return [];
    }
    this.doorbell.saw(queue, null);
    return r[0][1].map(([id, fields]) => ({ id, fields }));
  }

  waitNew(queues: string[], timeoutMs: number, signal: AbortSignal): Promise<boolean> {
    return this.doorbell.wait(queues, timeoutMs, signal);
  }

  closeWait(): void {
    this.doorbell.close();
  }

  async claimPending(queue: string, consumer: string, cursor: string, minIdleMs = 0): Promise<{ cursor: string; entries: RawStreamEntry[] }> {
    const r = (await (this.redis as any).xautoclaim(this.ctx.keys(queue).events, MIRROR_GROUP, consumer, minIdleMs, cursor, 'COUNT', 1000)) as [string, XEntries, string[]?];
    // An entry deleted while pending comes back with null fields: nothing to take over.
    return { cursor: r[0], entries: r[1].filter(([, fields]) => fields).map(([id, fields]) => ({ id, fields })) };
  }

  rawEntries(queue: string, ids: string[]): Promise<(Buffer[] | null)[]> {
    const key = this.ctx.keys(queue).events;
    return Promise.all(
      ids.map(async (id) => {
        const r = (await (this.redis as any).xrangeBuffer(key, id, id)) as [Buffer, Buffer[]][];
        return r.length && r[0][1] ? r[0][1] : null;
      }),
    );
  }

  ack(queue: string, ids: string[]): Promise<number> {
    const last = ids.reduce((a, b) => (compareIds(a, b) >= 0 ? a : b));
    return this.ctx.scripts.run<number>('ackEvents', [this.ctx.keys(queue).events], [MIRROR_GROUP, last, nextStreamId(last), ...ids]);
  }

  async forgetFinished(queue: string, jobIds: string[], keepCount: number, keepMs: number): Promise<void> {
    const k = this.ctx.keys(queue);
    await this.ctx.scripts.run('forgetJobs', [k.done, k.meta], [k.base, keepCount, keepMs, ...jobIds]);
  }

  streamName(queue: string): string {
    return this.ctx.keys(queue).events;
  }

  onNewQueue(fn: (queue: string) => void): () => void {
    const sub = this.redis.duplicate() as RedisClient;
    sub.on('error', () => undefined); // reconnects by itself; callers also poll
    sub.on('message', (_channel: string, queue: string) => fn(queue));
    void sub.subscribe(newQueueChannel(this.ctx.prefix)).catch(() => undefined);
    return () => sub.disconnect();
  }

  async backlog(queues: string[]): Promise<BacklogState> {
    const rows = await Promise.all(
      queues.map(async (q) => {
        const key = this.ctx.keys(q).events;
        const [len, first] = await Promise.all([this.redis.xlen(key), this.redis.xrange(key, '-', '+', 'COUNT', 1)]);
        return { len, firstMs: first.length ? Number(first[0][0].split('-')[0]) : null };
      }),
    );
    const pending = rows.reduce((a, r) => a + r.len, 0);
    const oldest = rows.reduce<number | null>((a, r) => (r.firstMs !== null && (a === null || r.firstMs < a) ? r.firstMs : a), null);
    const [sec, usec] = await this.redis.time();
    const now = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
    return { pending, lagMs: oldest === null ? 0 : Math.max(0, now - oldest) };
  }

  async tail(queue: string): Promise<{ lastId: string | null; owned: boolean }> {
    const k = this.ctx.keys(queue);
    const [last, owner] = await Promise.all([this.redis.xrevrange(k.events, '+', '-', 'COUNT', 1), this.redis.exists(k.mirrorLock)]);
    return { lastId: last.length ? last[0][0] : null, owned: owner === 1 };
  }

  async writersRunning(): Promise<boolean> {
    return (await this.redis.exists(mirrorWritersKey(this.ctx.prefix))) === 1;
  }

  async oldestId(queue: string): Promise<string | null> {
    const r = await this.redis.xrange(this.ctx.keys(queue).events, '-', '+', 'COUNT', 1);
    return r.length ? r[0][0] : null;
  }
}
