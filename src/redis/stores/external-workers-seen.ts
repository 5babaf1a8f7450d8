import { ExternalWorkerSeen, type ExternalSighting, type ExternalWorkerInfo } from '../../core/ports/external-workers';
import type { RedisClient } from '../connection';
import { externalWorkerKey, externalWorkersKey } from '../keys';

/**
 * {@link ExternalWorkerSeen} in Redis, per project (src/redis/keys.ts): a
 * hash per worker (`q:<queue>` → last claim there, `lastClaimAt`,
 * `lastSeenAt`, `firstSeenAt`) and a sorted set of ids by last seen.
 */
export class RedisExternalWorkerSeen implements ExternalWorkerSeen {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  async record(sightings: ExternalSighting[], keepMs: number): Promise<void> {
    const m = this.redis.multi();
    for (const d of sightings) {
      const key = externalWorkerKey(this.prefix, d.id, d.project);
      const fields: Record<string, string | number> = { id: d.id, lastSeenAt: d.seenAt };
      for (const [q, at] of d.queues) fields[`q:${q}`] = at;
      if (d.claimAt !== null) fields.lastClaimAt = d.claimAt;
      m.hset(key, fields).hsetnx(key, 'firstSeenAt', d.seenAt).pexpire(key, keepMs);
      m.zadd(externalWorkersKey(this.prefix, d.project), d.seenAt, d.id);
    }
    await m.exec();
  }

  async list(project: string, sinceMs: number): Promise<ExternalWorkerInfo[]> {
    const setKey = externalWorkersKey(this.prefix, project);
    await this.redis.zremrangebyscore(setKey, '-inf', sinceMs);
    const ids = await this.redis.zrevrange(setKey, 0, 999);
    const hashes = await Promise.all(ids.map((id) => this.redis.hgetall(externalWorkerKey(this.prefix, id, project))));
    const out: ExternalWorkerInfo[] = [];
    for (const h of hashes) {
      if (!h.id) continue;
      const queues = Object.keys(h).filter((k) => k.startsWith('q:')).map((k) => k.slice(2)).sort();
      out.push({
        id: h.id, queues, lastClaimAt: h.lastClaimAt ? Number(h.lastClaimAt) : null, lastSeenAt: Number(h.lastSeenAt), firstSeenAt: Number(h.firstSeenAt ?? h.lastSeenAt),
      });
    }
    return out;
  }
}
