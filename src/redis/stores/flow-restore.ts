import { FLOW_RESTORE_MAX_JOBS, FlowRestoreStore, type FlowRestoreJob, type FlowRestoreResult } from '../../core/ports/flow-restore';
import type { RedisContext } from '../context';
import { flowKeyBase } from './flow-record';

/** Flat [queue, id, queue, id…] as {queue, id} pairs. */
function pairs(flat: string[] | undefined): { queue: string; id: string }[] {
  const out: { queue: string; id: string }[] = [];
  for (let i = 0; flat && i + 1 < flat.length; i += 2) out.push({ queue: flat[i], id: flat[i + 1] });
  return out;
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

  async statuses(jobs: { queue: string; id: string }[]): Promise<(string | null)[]> {
    if (jobs.length > FLOW_RESTORE_MAX_JOBS) throw new RangeError(`at most ${FLOW_RESTORE_MAX_JOBS} jobs, got ${jobs.length}`);
    if (!jobs.length) return [];
    const p = this.ctx.redis.pipeline();
    for (const j of jobs) p.hget(`${this.ctx.keys(j.queue).base}job:${j.id}`, 's');
    return ((await p.exec()) ?? []).map(([err, s]) => {
      if (err) throw err;
      return (s as string | null) ?? null;
    });
  }
}
