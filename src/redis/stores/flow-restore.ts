import { FLOW_RESTORE_MAX_JOBS, FlowRestoreStore, type FlowRestoreJob, type FlowRestoreResult } from '../../core/ports/flow-restore';
import { ChainableCommander, Cluster } from 'ioredis';
import type { RedisClient } from '../connection';
import type { RedisContext } from '../context';
import { flowKeyBase } from './flow-record';

/** Flat [queue, id, queue, id…] as {queue, id} pairs. */
function pairs(flat: string[] | undefined): { queue: string; id: string }[] {
  const out: { queue: string; id: string }[] = [];
  for (let i = 0; flat && i + 1 < flat.length; i += 2) out.push({ queue: flat[i], id: flat[i + 1] });
  return out;
}

/** The job ids of a hash's `dp` (`[{ref, id, queue}]`); empty when it has none or it cannot be read. */
function dependencyIds(dp: string | null): string[] {
  if (!dp) return [];
  try {
    const v = JSON.parse(dp) as unknown;
    return Array.isArray(v) ? v.flatMap((d) => (d && typeof (d as { id?: unknown }).id === 'string' ? [(d as { id: string }).id] : [])) : [];
  } catch {
    return [];
  }
}

/** {@link FlowRestoreStore} over lua/restoreFlow-1.lua (one call per flow, in the flow's slot). */
export class RedisFlowRestoreStore implements FlowRestoreStore {
  constructor(private readonly ctx: RedisContext) {}

  async rebuild(flowId: string, project: string, createdAt: number, jobs: FlowRestoreJob[]): Promise<FlowRestoreResult> {
    if (!jobs.length || jobs.length > FLOW_RESTORE_MAX_JOBS) throw new RangeError(`a flow's record holds 1..${FLOW_RESTORE_MAX_JOBS} jobs, got ${jobs.length}`);
    const base = flowKeyBase(this.ctx.prefix, flowId);
    const args: (string | number)[] = [base, project, createdAt, jobs.length];
    for (const j of jobs) {
      const oc = j.outcome === 'completed' ? 'c' : j.outcome === 'ended' ? 'x' : '';
      args.push(j.id, j.queue, j.onDependencyFailure === 'run' ? 'r' : 'c', j.dependsOn.join(','), j.ref ?? '', oc, j.authoritative ? '1' : '0');
    }
    const [created, applied, release, cancel] = await this.ctx.scripts.run<[number, number, string[], string[]]>('restoreFlow', [base + 'meta'], args);
    return { created: created === 1, applied: Number(applied), release: pairs(release), cancel: pairs(cancel) };
  }

  async moves(flowId: string): Promise<Pick<FlowRestoreResult, 'release' | 'cancel'>> {
    const base = flowKeyBase(this.ctx.prefix, flowId);
    const [release, cancel] = await this.ctx.scripts.run<[string[], string[]]>('flowMoves', [base + 'meta'], [base]);
    return { release: pairs(release), cancel: pairs(cancel) };
  }

  async peek(jobs: { queue: string; id: string }[]): Promise<({ status: string; onDependencyFailure: 'cancel' | 'run'; dependsOn: string[] } | null)[]> {
    if (jobs.length > FLOW_RESTORE_MAX_JOBS) throw new RangeError(`at most ${FLOW_RESTORE_MAX_JOBS} jobs, got ${jobs.length}`);
    if (!jobs.length) return [];
    const rows = await this.each(jobs, (r, key) => r.hmget(key, 's', 'fp', 'dp'));
    return rows.map((v) => {
      const [s, fp, dp] = v as (string | null)[];
      if (s === null) return null;
      return { status: s, onDependencyFailure: fp === 'r' ? 'run' : 'cancel', dependsOn: dependencyIds(dp) };
    });
  }

  async statuses(jobs: { queue: string; id: string }[]): Promise<(string | null)[]> {
    if (jobs.length > FLOW_RESTORE_MAX_JOBS) throw new RangeError(`at most ${FLOW_RESTORE_MAX_JOBS} jobs, got ${jobs.length}`);
    if (!jobs.length) return [];
    return (await this.each(jobs, (r, key) => r.hget(key, 's'))).map((s) => (s as string | null) ?? null);
  }

  /**
   * One command per job on its hash, in its queue's slot: one pipeline on a
   * single node; on a cluster each on its own (ioredis refuses a pipeline over
   * several slots; the auto-pipeline batches them per node).
   * @throws the first command's error.
   */
  private async each(jobs: { queue: string; id: string }[], cmd: (r: ChainableCommander | RedisClient, key: string) => unknown): Promise<unknown[]> {
    const key = (j: { queue: string; id: string }) => `${this.ctx.keys(j.queue).base}job:${j.id}`;
    const redis = this.ctx.redis;
    if (redis instanceof Cluster) return Promise.all(jobs.map((j) => cmd(redis, key(j)) as Promise<unknown>));
    const p = redis.pipeline();
    for (const j of jobs) cmd(p, key(j));
    return ((await p.exec()) ?? []).map(([err, v]) => {
      if (err) throw err;
      return v;
    });
  }
}
