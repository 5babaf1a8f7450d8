import type { NormalizedFlowJob } from '../../core/flow-graph';
import { ScriptErrorCode, UnavailableError } from '../../core/errors';
import { FlowAdvance, FlowKeyClaim, FlowOutboxEntry, FlowOutcome, FlowRecord, FlowRecordJob, FlowRecordStore, JobPlacement } from '../../core/ports/flows';
import type { Subscription } from '../../core/ports/subscription';
import type { RedisClient } from '../connection';
import type { RedisContext } from '../context';
import { flowQueuesKey, flowWakeChannel } from '../keys';
import { claimFlowKey, releaseFlowKey } from './flow-keys';
import type { SubscriberFactory } from './schedule-signals';

/** The keys of one flow's record: `<prefix>:{flow:<id>}:` (a hash tag of its own: one slot per flow). */
export function flowKeyBase(prefix: string, flowId: string): string {
  return `${prefix}:{flow:${flowId}}:`;
}

/** Every hash of a flow's record (lua/recordFlow-1.lua, lua/advanceFlow-1.lua), and `refs` (job id -> ref, written here). */
const RECORD_PARTS = ['meta', 'q', 'deps', 'dnts', 'left', 'pol', 'out', 'refs', 'seen'] as const;

/**
 * How long a flow's record stays in Redis once every job has an outcome (ms):
 * 7 days. Then GET /flows/:id reads the history, and a DLQ retry of one of
 * its jobs no longer brings back the dependents it cancelled (docs/workflows.md).
 */
export const FLOW_RECORD_KEEP_MS = 7 * 86_400_000;

/** Jobs one flow record holds at most (lua/recordFlow-1.lua; POST /flows allows 1,000). */
export const MAX_RECORD_JOBS = 20_000;

/** Outcomes one advanceFlow call applies at most (lua/advanceFlow-1.lua). */
export const MAX_OUTCOMES_PER_CALL = 1000;

const OUTCOME: Record<FlowOutcome, string> = { completed: 'c', ended: 'x', retried: 'r' };
const OUTCOME_OF: Record<string, FlowOutcome> = { c: 'completed', x: 'ended', r: 'retried' };

/** "flowId|jobId|outcome|n|t" (lua/includes/flowout.lua; t, µs, absent from entries of earlier versions), or null when malformed. */
export function parseOutboxEntry(raw: string): FlowOutboxEntry | null {
  const [flowId, jobId, oc, n, at, ...rest] = raw.split('|');
  const outcome = OUTCOME_OF[oc];
  if (!flowId || !jobId || !outcome || !/^\d+$/.test(n ?? '') || rest.length || (at !== undefined && !/^\d{1,17}$/.test(at))) return null;
  return { flowId, jobId, outcome, raw, ...(at !== undefined && { at }) };
}

/** Flat [queue, id, queue, id…] as {queue, id} pairs. */
function pairs(flat: string[] | undefined): { queue: string; id: string }[] {
  const out: { queue: string; id: string }[] = [];
  for (let i = 0; flat && i + 1 < flat.length; i += 2) out.push({ queue: flat[i], id: flat[i + 1] });
  return out;
}

/** The flow record in Redis (lua/recordFlow-1.lua, lua/advanceFlow-1.lua) and the queue-side moves (lua/moveFlowJobs-7.lua). */
/**
 * lua/moveFlowJobs-7.lua answers {ERR_RESTORING} on a queue fenced until the
 * restore watch checked it (includes/fence.lua): nothing moved, and a move
 * taken for a no-op would be lost.
 * @throws UnavailableError then.
 */
function fencedMove(queue: string, reply: unknown[]): void {
  if (reply[0] === ScriptErrorCode.Restoring) {
    throw new UnavailableError(`queue ${queue} awaits its check against PostgreSQL after a Redis restart: its flow jobs cannot move yet; retry shortly`);
  }
}

export class RedisFlowRecordStore implements FlowRecordStore {
  /** @param connect opens the subscriber's own connection (default: a duplicate of the context's). */
  constructor(
    private readonly ctx: RedisContext,
    private readonly connect: SubscriberFactory = () => ctx.redis.duplicate() as RedisClient,
  ) {}

  claimKey(project: string, key: string, flowId: string, jobs: NormalizedFlowJob[], ttlMs: number): Promise<FlowKeyClaim> {
    return claimFlowKey(this.ctx, project, key, flowId, jobs, ttlMs);
  }

  releaseKey(project: string, key: string, flowId: string): Promise<boolean> {
    return releaseFlowKey(this.ctx, project, key, flowId);
  }

  async record(flowId: string, project: string, jobs: FlowRecordJob[]): Promise<boolean> {
    if (jobs.length < 1 || jobs.length > MAX_RECORD_JOBS) throw new RangeError(`a flow record holds 1..${MAX_RECORD_JOBS} jobs`);
    const base = flowKeyBase(this.ctx.prefix, flowId);
    const args: (string | number)[] = [base, project, jobs.length];
    // The refs go in the record (hash refs), for GET /flows/:id once Redis has pruned a job's hash.
    for (const j of jobs) args.push(j.id, j.queue, j.onDependencyFailure === 'run' ? 'r' : 'c', j.dependsOn.join(','), j.ref ?? '');
    return (await this.ctx.scripts.run<number>('recordFlow', [base + 'meta'], args)) === 1;
  }

  async read(flowId: string): Promise<FlowRecord | null> {
    const base = flowKeyBase(this.ctx.prefix, flowId);
    const [meta, q, deps, pol, refs] = await Promise.all([
      this.ctx.redis.hmget(base + 'meta', 'project', 'createdAt'),
      this.ctx.redis.hgetall(base + 'q'),
      this.ctx.redis.hgetall(base + 'deps'),
      this.ctx.redis.hgetall(base + 'pol'),
      this.ctx.redis.hgetall(base + 'refs'),
    ]);
    if (meta[0] === null) return null;
    const jobs: FlowRecord['jobs'] = Object.keys(q)
      .sort()
      .map((id) => ({ id, queue: q[id], onDependencyFailure: pol[id] === 'r' ? ('run' as const) : ('cancel' as const), dependsOn: deps[id] ? deps[id].split(',') : [], ref: (refs[id] as string | undefined) ?? null }));
    // A flow recorded without refs (through the stores): each job's own hash has it while live.
    const missing = jobs.filter((j) => j.ref === null);
    const rf = await Promise.all(missing.map((j) => this.ctx.redis.hget(this.ctx.keys(j.queue).base + 'job:' + j.id, 'rf')));
    missing.forEach((j, i) => (j.ref = rf[i]));
    return { flowId, project: meta[0], createdAt: Number(meta[1]), jobs };
  }

  async exists(flowId: string): Promise<boolean> {
    return (await this.ctx.redis.exists(flowKeyBase(this.ctx.prefix, flowId) + 'meta')) === 1;
  }

  async discard(flowId: string): Promise<void> {
    const base = flowKeyBase(this.ctx.prefix, flowId);
    await this.ctx.redis.del(...RECORD_PARTS.map((p) => base + p));
  }

  async placement(queue: string, id: string): Promise<JobPlacement | null> {
    const [fl, rf, dp, fp] = await this.ctx.redis.hmget(this.ctx.keys(queue).base + 'job:' + id, 'fl', 'rf', 'dp', 'fp');
    if (!fl) return null;
    let dependsOn: JobPlacement['dependsOn'] = [];
    try {
      const parsed: unknown = JSON.parse(dp || '[]');
      if (Array.isArray(parsed)) dependsOn = parsed.filter((d): d is JobPlacement['dependsOn'][number] => typeof d?.id === 'string' && typeof d?.queue === 'string' && typeof d?.ref === 'string');
    } catch {
      /* a corrupted field: no dependencies to show */
    }
    return { flowId: fl, ref: rf ?? '', dependsOn, policy: fp === 'r' ? 'run' : 'cancel' };
  }

  advance(flowId: string, jobId: string, outcome: FlowOutcome, at?: string): Promise<FlowAdvance> {
    return this.advanceMany(flowId, [{ jobId, outcome, at }]);
  }

  async advanceMany(flowId: string, outcomes: { jobId: string; outcome: FlowOutcome; at?: string }[]): Promise<FlowAdvance> {
    if (outcomes.length < 1 || outcomes.length > MAX_OUTCOMES_PER_CALL) throw new RangeError(`advanceMany takes 1..${MAX_OUTCOMES_PER_CALL} outcomes`);
    const base = flowKeyBase(this.ctx.prefix, flowId);
    const args: (string | number)[] = [base, FLOW_RECORD_KEEP_MS];
    for (const o of outcomes) args.push(o.jobId, OUTCOME[o.outcome], o.at ?? '');
    const [release, cancel, reblock] = await this.ctx.scripts.run<string[][]>('advanceFlow', [base + 'meta'], args);
    return { release: pairs(release), cancel: pairs(cancel), reblock: pairs(reblock) };
  }

  async move(queue: string, op: 'unblock' | 'cancel' | 'reblock', ids: string[]): Promise<string[]> {
    if (op === 'reblock') return (await this.reblock(queue, ids)).moved;
    if (!ids.length) return [];
    const k = this.ctx.keys(queue);
    const r = await this.ctx.scripts.run<(string | number)[]>('moveFlowJobs', [k.blocked, k.waiting, k.delayed, k.events, k.wake, k.meta, k.flowOutbox], [k.base, op, ...ids]);
    fencedMove(queue, r);
    return r as string[];
  }

  async reblock(queue: string, ids: string[]): Promise<{ moved: string[]; at: string }> {
    if (!ids.length) return { moved: [], at: '' };
    const k = this.ctx.keys(queue);
    const r = await this.ctx.scripts.run<[string[]?, string?] | [number]>('moveFlowJobs', [k.blocked, k.waiting, k.delayed, k.events, k.wake, k.meta, k.flowOutbox], [k.base, 'reblock', ...ids]);
    // A fenced queue moves nothing and says so with an empty answer (no time): the dependents stay
    // cancelled, an end; the DLQ retry that asked is itself refused (503) on a fenced queue.
    if (r[0] === ScriptErrorCode.Restoring) return { moved: [], at: '' };
    const [moved, at] = r as [string[]?, string?];
    return { moved: moved ?? [], at: at ?? '' };
  }

  async watch(queue: string): Promise<void> {
    await this.ctx.redis.sadd(flowQueuesKey(this.ctx.prefix), queue);
  }

  async listen(onWake: (queue: string) => void): Promise<Subscription> {
    const sub = this.connect('sluice-flows');
    sub.on('error', () => undefined); // reconnects by itself; the flow worker's periodic pass covers the gap
    sub.on('message', (_channel: string, queue: string) => onWake(queue));
    await sub.subscribe(flowWakeChannel(this.ctx.prefix)).catch(() => undefined);
    return { close: () => sub.disconnect() };
  }

  watched(): Promise<string[]> {
    return this.ctx.redis.smembers(flowQueuesKey(this.ctx.prefix));
  }

  async take(queue: string, max: number, leaseMs: number, acked: string[] = []): Promise<FlowOutboxEntry[]> {
    const k = this.ctx.keys(queue);
    const raws = await this.ctx.scripts.run<string[]>('takeFlowOutcomes', [k.flowOutbox, k.flowInFlight], [max, leaseMs, ...acked]);
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
