import { StoreConnection } from '../../core/ports/connection';
import type { RedisClient } from '../connection';

/** {@link StoreConnection} over an ioredis client (single node, Sentinel or Cluster). */
export class RedisConnectionState implements StoreConnection {
  constructor(private readonly redis: RedisClient) {}

  isReady(): boolean {
    return this.redis.status === 'ready';
  }

  state(): string {
    return this.redis.status;
  }

  async ping(timeoutMs: number): Promise<void> {
    if (this.redis.status !== 'ready') throw new Error(`connection is ${this.redis.status}`);
    // A PING sent while the client reconnects would wait in ioredis's offline
    // queue: the state is reported at once instead (above).
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`PING did not answer within ${timeoutMs} ms`)), timeoutMs);
    });
    const pong = await Promise.race([this.redis.ping(), timeout]).finally(() => clearTimeout(timer));
    if (pong !== 'PONG') throw new Error(`PING answered ${String(pong)}`);
  }

  async serverTime(): Promise<number> {
    const [sec, usec] = await this.redis.time();
    return Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
  }

  onClose(fn: () => void): () => void {
    this.redis.on('close', fn);
    return () => this.redis.off('close', fn);
  }

  onReady(fn: () => void): () => void {
    this.redis.on('ready', fn);
    return () => this.redis.off('ready', fn);
  }
}
