import { FlowAdvance, FlowOutboxEntry, FlowOutcome, FlowRecordJob, FlowRecordStore } from '../../core/ports/flows';
import type { RedisContext } from '../context';
import { flowQueuesKey } from '../keys';

/** The keys of one flow's record: `<prefix>:{flow:<id>}:` (a hash tag of its own: one slot per flow). */
export function flowKeyBase(prefix: string, flowId: string): string {
  return `${prefix}:{flow:${flowId}}:`;
}

const OUTCOME: Record<FlowOutcome, string> = { completed: 'c', ended: 'x', retried: 'r' };
const OUTCOME_OF: Record<string, FlowOutcome> = { c: 'completed', x: 'ended', r: 'retried' };

/** "flowId|jobId|outcome|n" (lua/includes/flowout.lua), or null when malformed. */
export function parseOutboxEntry(raw: string): FlowOutboxEntry | null {
  const [flowId, jobId, oc, n] = raw.split('|');
  const outcome = OUTCOME_OF[oc];
  if (!flowId || !jobId || !outcome || !/^\d+$/.test(n ?? '')) return null;
  return { flowId, jobId, outcome, raw };
}

/** Flat [queue, id, queue, id…] as {queue, id} pairs. */
function pairs(flat: string[] | undefined): { queue: string; id: string }[] {
  const out: { queue: string; id: string }[] = [];
  for (let i = 0; flat && i + 1 < flat.length; i += 2) out.push({ queue: flat[i], id: flat[i + 1] });
  return out;
}

/** The flow record in Redis (lua/recordFlow-1.lua, lua/advanceFlow-1.lua) and the queue-side moves (lua/moveFlowJobs-7.lua). */
export class RedisFlowRecordStore implements FlowRecordStore {
  constructor(private readonly ctx: RedisContext) {}

  async record(flowId: string, project: string, jobs: FlowRecordJob[]): Promise<boolean> {
    const base = flowKeyBase(this.ctx.prefix, flowId);
    const args: (string | number)[] = [base, project, jobs.length];
    for (const j of jobs) args.push(j.id, j.queue, j.onDependencyFailure === 'run' ? 'r' : 'c', j.dependsOn.join(','));
    return (await this.ctx.scripts.run<number>('recordFlow', [base + 'meta'], args)) === 1;
  }

  async advance(flowId: string, jobId: string, outcome: FlowOutcome): Promise<FlowAdvance> {
    const base = flowKeyBase(this.ctx.prefix, flowId);
    const [release, cancel, reblock] = await this.ctx.scripts.run<string[][]>('advanceFlow', [base + 'meta'], [base, jobId, OUTCOME[outcome]]);
    return { release: pairs(release), cancel: pairs(cancel), reblock: pairs(reblock) };
  }

  async move(queue: string, op: 'unblock' | 'cancel' | 'reblock', ids: string[]): Promise<string[]> {
    if (!ids.length) return [];
    const k = this.ctx.keys(queue);
    return this.ctx.scripts.run<string[]>('moveFlowJobs', [k.blocked, k.waiting, k.delayed, k.events, k.wake, k.meta, k.flowOutbox], [k.base, op, ...ids]);
  }

  async watch(queue: string): Promise<void> {
    await this.ctx.redis.sadd(flowQueuesKey(this.ctx.prefix), queue);
  }

  watched(): Promise<string[]> {
    return this.ctx.redis.smembers(flowQueuesKey(this.ctx.prefix));
  }

  async take(queue: string, max: number, leaseMs: number): Promise<FlowOutboxEntry[]> {
    const k = this.ctx.keys(queue);
    const raws = await this.ctx.scripts.run<string[]>('takeFlowOutcomes', [k.flowOutbox, k.flowInFlight], [max, leaseMs]);
    const out: FlowOutboxEntry[] = [];
    const bad: string[] = [];
    for (const raw of raws) {
      const e = parseOutboxEntry(raw);
      if (e) out.push(e);
      else bad.push(raw);
    }
    if (bad.length) await this.ack(queue, bad);
    return out;
  }

  async ack(queue: string, raws: string[]): Promise<void> {
    if (raws.length) await this.ctx.redis.zrem(this.ctx.keys(queue).flowInFlight, ...raws);
  }
}
