import type { Job } from '../core/job';
import type { RedisClient } from './connection';
import { decodeJob, decodeJobLeniently, JobDecodeError } from './job-codec';
import { QueueKeys, queueKeys } from './keys';
import { isNoScript, RedisScripts, ScriptName } from './scripts';

/**
 * What every Redis store shares: the connection, the scripts registered on
 * it, the key prefix and a cache of each queue's key names. Private to
 * `src/redis`: features see the stores only through the ports of
 * `src/core/ports`.
 */
export class RedisContext {
  private readonly keysCache = new Map<string, QueueKeys>();

  constructor(
    readonly redis: RedisClient,
    readonly scripts: RedisScripts,
    readonly prefix: string,
  ) {}

  /** The key names of one queue (cached). */
  keys(queue: string): QueueKeys {
    let k = this.keysCache.get(queue);
    if (!k) {
      k = queueKeys(this.prefix, queue);
      this.keysCache.set(queue, k);
    }
    return k;
  }

  /**
   * Runs a script and reads one job's hash in one MULTI (all keys share the
   * queue's slot). A NOSCRIPT reply (script cache flushed by hand) means the
   * script did not run: the scripts are loaded again and the MULTI retried once.
   * @returns the script's reply and the job as the script left it (null: no hash).
   */
  async runAndRead<T>(name: ScriptName, keys: string[], args: (string | number)[], queue: string, id: string, retried = false): Promise<[T, Job | null]> {
    const jk = this.keys(queue).base + 'job:' + id;
    const multi = this.redis.multi();
    this.scripts.addTo(multi, name, keys, args);
    multi.hgetallBuffer(jk);
    const res: [Error | null, unknown][] | null = await multi.exec();
    if (!res) throw new Error(`${name}: transaction aborted`);
    const err = res.find(([e]) => e)?.[0];
    if (err && !retried && isNoScript(err)) {
      await this.scripts.verify();
      return this.runAndRead(name, keys, args, queue, id, true);
    }
    if (err) throw err;
    return [res[0][1] as T, decodeRawJob(queue, id, res[1][1] as Record<string, Buffer>)];
  }

  /**
   * Reads a job's hash (payload chunks merged).
   * @returns null when Redis no longer holds it.
   * @throws JobDecodeError never: a corrupted job is decoded leniently so it stays readable.
   */
  async readJob(queue: string, id: string): Promise<Job | null> {
    return decodeRawJob(queue, id, await this.redis.hgetallBuffer(this.keys(queue).base + 'job:' + id));
  }
}

function decodeRawJob(queue: string, id: string, raw: Record<string, Buffer> | null): Job | null {
  if (!raw || Object.keys(raw).length === 0) return null;
  const h = mergePayload(raw);
  try {
    return decodeJob(id, queue, h);
  } catch (e) {
    if (!(e instanceof JobDecodeError)) throw e;
    // A corrupted job (dead-lettered with a decode error) must stay readable.
    return decodeJobLeniently(id, queue, h);
  }
}

/**
 * Merges payload chunks p0..pN of a raw HGETALL (see lua/includes/job.lua).
 * Works on Buffers: a chunk boundary may fall inside a multi-byte character.
 */
function mergePayload(raw: Record<string, Buffer>): Record<string, string> {
  const out: Record<string, string> = {};
  const chunks: Buffer[] = [];
  for (const [key, v] of Object.entries(raw)) {
    const m = /^p(\d+)$/.exec(key);
    if (m) chunks[Number(m[1])] = v;
    else if (key !== 'pn') out[key] = v.toString('utf8');
  }
  out.p = Buffer.concat(chunks.filter(Boolean)).toString('utf8');
  return out;
}
