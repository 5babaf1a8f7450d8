import { createHash } from 'node:crypto';
import type { NormalizedFlowJob } from '../../core/flow-graph';
import { ScriptErrorCode } from '../../core/errors';
import type { FlowKeyClaim } from '../../core/ports/flows';
import type { RedisContext } from '../context';
import { flowIdempotencyKey } from '../keys';
import { bodyHash } from './enqueue';

/**
 * "The same body" of a flow: its jobs in order, each as its ref, queue,
 * dependencies (refs), policy and the enqueue's own body hash (enqueue.ts).
 */
export function flowBodyHash(jobs: NormalizedFlowJob[]): string {
  const canonical = JSON.stringify(jobs.map((j) => [j.ref, j.queue, j.dependsOn, j.onDependencyFailure, bodyHash(j)]));
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 22);
}

/** FlowRecordStore.claimKey on Redis: lua/claimIdempotencyKey-1.lua, the job keys' mechanism. */
export async function claimFlowKey(ctx: RedisContext, project: string, key: string, flowId: string, jobs: NormalizedFlowJob[], ttlMs: number): Promise<FlowKeyClaim> {
  const [code, held] = await ctx.scripts.run<[number, string?]>('claimIdempotencyKey', [flowIdempotencyKey(ctx.prefix, project, key)], [flowId, flowBodyHash(jobs), ttlMs]);
  if (code === 0) return { claimed: true };
  return { claimed: false, flowId: String(held), sameBody: code !== ScriptErrorCode.IdempotencyConflict };
}

/** FlowRecordStore.releaseKey on Redis: lua/releaseIdempotencyKey-1.lua. */
export async function releaseFlowKey(ctx: RedisContext, project: string, key: string, flowId: string): Promise<boolean> {
  return (await ctx.scripts.run<number>('releaseIdempotencyKey', [flowIdempotencyKey(ctx.prefix, project, key)], [flowId])) === 1;
}
