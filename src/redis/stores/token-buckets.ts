import { TokenBuckets } from '../../core/ports/token-buckets';
import type { RedisContext } from '../context';
import { keyBucketKey } from '../keys';

/** {@link TokenBuckets} in Redis: one hash per API key, `<prefix>:ratelimit:key:<id>`, taken by lua/takeToken-1.lua (Redis TIME). */
export class RedisTokenBuckets implements TokenBuckets {
  constructor(private readonly ctx: RedisContext) {}

  async take(keyId: string, perSec: number, burst: number): Promise<number> {
    return Number(await this.ctx.scripts.run<number>('takeToken', [keyBucketKey(this.ctx.prefix, keyId)], [perSec, burst]));
  }
}
