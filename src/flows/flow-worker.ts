import type { FlowAdvance, FlowOutboxEntry, FlowRecordStore } from '../core/ports/flows';

/** Outbox entries taken per queue per step. */
export const FLOW_BATCH = 100;
/** How long a taken entry stays in flight before another worker may take it again, ms. */
export const FLOW_LEASE_MS = 30_000;

type Ref = { queue: string; id: string };

function byQueue(refs: Ref[]): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const r of refs) m.set(r.queue, [...(m.get(r.queue) ?? []), r.id]);
  return m;
}

/**
 * Carries out what one outcome decided (docs/workflows.md "Release"):
 * unblocks and cancels dependents in their queues, and for a DLQ retry
 * blocks again the dependents it had cancelled, then theirs, down the graph
 * (each one brought back is 'retried' in the record in turn). Every step acts
 * once, so running it again after a crash changes nothing already done.
 */
async function carryOut(store: FlowRecordStore, flowId: string, adv: FlowAdvance): Promise<void> {
  for (const [q, ids] of byQueue(adv.release)) await store.move(q, 'unblock', ids);
  for (const [q, ids] of byQueue(adv.cancel)) await store.move(q, 'cancel', ids);
  const seen = new Set<string>();
  let next = adv.reblock;
  while (next.length) {
    const more: Ref[] = [];
    for (const [q, ids] of byQueue(next.filter((r) => !seen.has(r.id)))) {
      for (const id of await store.move(q, 'reblock', ids)) {
        seen.add(id);
        more.push(...(await store.advance(flowId, id, 'retried')).reblock);
      }
    }
    next = more;
  }
}

/** Applies one outbox entry: the record first (lua/advanceFlow-1.lua), then the queues. */
export async function applyOutcome(store: FlowRecordStore, e: FlowOutboxEntry): Promise<void> {
  await carryOut(store, e.flowId, await store.advance(e.flowId, e.jobId, e.outcome));
}

/**
 * One pass of the flow worker over every queue that has had flow jobs: each
 * queue's outbox entries in order, acknowledged once applied (an entry whose
 * worker died is handed out again after {@link FLOW_LEASE_MS}). No
 * PostgreSQL read. A queue whose Redis fails does not stop the others.
 * @returns the entries applied.
 * @throws the first failure, after every queue was tried.
 */
export async function advanceFlows(store: FlowRecordStore): Promise<number> {
  let total = 0;
  let failure: unknown;
  for (const q of await store.watched()) {
    try {
      let batch: FlowOutboxEntry[];
      do {
        batch = await store.take(q, FLOW_BATCH, FLOW_LEASE_MS);
        for (const e of batch) await applyOutcome(store, e);
        await store.ack(q, batch.map((e) => e.raw));
        total += batch.length;
      } while (batch.length === FLOW_BATCH);
    } catch (e) {
      failure ??= e;
    }
  }
  if (failure) throw failure;
  return total;
}
