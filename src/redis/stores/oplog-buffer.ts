import { OplogBuffer, OplogBufferGoneError, type OplogConsumer, type OplogEntry } from '../../core/ports/oplog';
import type { RedisContext } from '../context';
import { oplogKeys } from '../keys';


/**
 * {@link OplogBuffer} in Redis: the stream `<prefix>:{oplog}:stream` (one
 * field `r` per entry, read by XREADGROUP/XAUTOCLAIM), its drop counter
 * `<prefix>:{oplog}:dropped`, appended by lua/recordAction-2.lua.
 */
export class RedisOplogBuffer implements OplogBuffer {
  private readonly keys: { stream: string; dropped: string };

  constructor(private readonly ctx: RedisContext) {
    this.keys = oplogKeys(ctx.prefix);
  }

  get name(): string {
    return this.keys.stream;
  }

  async append(record: string, max: number): Promise<boolean> {
    return (await this.ctx.scripts.run<number>('recordAction', [this.keys.stream, this.keys.dropped], [max, record])) === 1;
  }

  async ensureGroup(group: string): Promise<void> {
    try {
      // From '0': records appended before any flusher ran are read too.
      await this.ctx.redis.xgroup('CREATE', this.keys.stream, group, '0', 'MKSTREAM');
    } catch (e) {
      if (!/BUSYGROUP/.test((e as Error).message)) throw e;
    }
  }

  /** Deleted entries come back with null fields (a null record). */
  async read(group: string, consumer: string, from: 'pending' | 'new', count: number): Promise<OplogEntry[]> {
    const out = (await gone(this.ctx.redis.xreadgroup('GROUP', group, consumer, 'COUNT', count, 'STREAMS', this.keys.stream, from === 'pending' ? '0' : '>'))) as
      | [string, OplogEntry[]][]
      | null;
    return out?.[0]?.[1] ?? [];
  }

  async claimIdle(group: string, consumer: string, minIdleMs: number, count: number): Promise<OplogEntry[]> {
    const out = (await gone(this.ctx.redis.xautoclaim(this.keys.stream, group, consumer, minIdleMs, '0-0', 'COUNT', count))) as [string, OplogEntry[]];
    return (out?.[1] ?? []).filter((e) => e && e[0]);
  }

  async remove(group: string, ids: string[]): Promise<void> {
    await this.ctx.redis.multi().xack(this.keys.stream, group, ...ids).xdel(this.keys.stream, ...ids).exec();
  }

  async consumers(group: string): Promise<OplogConsumer[]> {
    const consumers = (await this.ctx.redis.xinfo('CONSUMERS', this.keys.stream, group)) as unknown[][];
    return consumers.map((c) => {
      const f: Record<string, unknown> = {};
      for (let i = 0; i + 1 < c.length; i += 2) f[String(c[i])] = c[i + 1];
      return { name: String(f.name), pending: Number(f.pending), idleMs: Number(f.idle) };
    });
  }

  async deleteConsumer(group: string, name: string): Promise<void> {
    await this.ctx.redis.xgroup('DELCONSUMER', this.keys.stream, group, name);
  }

  async state(): Promise<{ buffered: number; dropped: number }> {
    const [buffered, dropped] = await Promise.all([this.ctx.redis.xlen(this.keys.stream), this.ctx.redis.get(this.keys.dropped)]);
    return { buffered, dropped: Number(dropped ?? 0) };
  }
}

/** A NOGROUP reply (the stream or its group is gone) as {@link OplogBufferGoneError}. */
async function gone<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    if (/NOGROUP/.test((e as Error).message)) throw new OplogBufferGoneError((e as Error).message);
    throw e;
  }
}
