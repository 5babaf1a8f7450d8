import type { FlowAdvance, FlowOutboxEntry, FlowRecordStore } from '../core/ports/flows';

/** Outbox entries taken per queue per step (the most lua/takeFlowOutcomes-2.lua hands out; one flow's share is one advanceFlow step). */
export const FLOW_BATCH = 1000;
/** How long a taken entry stays in flight before another worker may take it again, ms. */
export const FLOW_LEASE_MS = 10_000;

type Ref = { queue: string; id: string };

function byQueue(refs: Ref[]): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const r of refs) m.set(r.queue, [...(m.get(r.queue) ?? []), r.id]);
  return m;
}

/**
 * Carries out what outcomes decided (docs/workflows.md "Release"): unblocks
 * and cancels dependents in their queues (one script per queue and move), and
 * for a DLQ retry blocks again the dependents it had cancelled, then theirs,
 * down the graph (each one brought back is 'retried' in the record in turn).
 * Every step acts once, so running it again after a crash changes nothing
 * already done.
 */
async function carryOut(store: FlowRecordStore, flowId: string, adv: FlowAdvance): Promise<void> {
  await Promise.all([...byQueue(adv.release)].map(([q, ids]) => store.move(q, 'unblock', ids)));
  await Promise.all([...byQueue(adv.cancel)].map(([q, ids]) => store.move(q, 'cancel', ids)));
  const seen = new Set<string>();
  let next = adv.reblock;
  while (next.length) {
    const more: Ref[] = [];
    for (const [q, ids] of byQueue(next.filter((r) => !seen.has(r.id)))) {
      const { moved, at } = await store.reblock(q, ids);
      for (const id of moved) {
        seen.add(id);
        more.push(...(await store.advance(flowId, id, 'retried', at || undefined)).reblock);
      }
    }
    next = more;
  }
}

/** Applies one outbox entry: the record first (lua/advanceFlow-1.lua), then the queues. */
export async function applyOutcome(store: FlowRecordStore, e: FlowOutboxEntry): Promise<void> {
  await carryOut(store, e.flowId, await store.advance(e.flowId, e.jobId, e.outcome, e.at));
}

/**
 * Applies a batch of one queue's outbox entries: per flow, its completions
 * and failures in one `advanceFlow` step (in their order), then the moves;
 * flows apart run side by side. A flow with a DLQ retry among them goes
 * entry by entry (a retry's reblocking reads what the queues did before it).
 * Same result as applying the entries one at a time, in far fewer round
 * trips: a 1,000-child fan-in is a step per batch taken, not one per child.
 */
export async function applyBatch(store: FlowRecordStore, batch: FlowOutboxEntry[]): Promise<void> {
  const flows = new Map<string, FlowOutboxEntry[]>();
  for (const e of batch) flows.set(e.flowId, [...(flows.get(e.flowId) ?? []), e]);
  await Promise.all(
    [...flows].map(async ([flowId, entries]) => {
      if (entries.some((e) => e.outcome === 'retried')) {
        for (const e of entries) await applyOutcome(store, e);
        return;
      }
      await carryOut(store, flowId, await store.advanceMany(flowId, entries.map((e) => ({ jobId: e.jobId, outcome: e.outcome, at: e.at }))));
    }),
  );
}

/**
 * One pass of the flow worker over `queues` (default: every queue that has
 * had flow jobs): each queue's outbox entries in order, acknowledged once
 * applied (an entry whose worker died is handed out again after
 * {@link FLOW_LEASE_MS}). Each batch is acknowledged by the step that takes
 * the next one; the last batch's acknowledgement is sent at the end, or, with
 * `held`, kept there (queue → entries) for the next pass's first step — off
 * the release's path (a repeat after a crash changes nothing). No PostgreSQL
 * read. A queue whose Redis fails does not stop the others.
 * @returns the entries applied.
 * @throws the first failure, after every queue was tried.
 */
export async function advanceFlows(store: FlowRecordStore, queues?: string[], held?: Map<string, string[]>): Promise<number> {
  let total = 0;
  let failure: unknown;
  for (const q of queues ?? (await store.watched())) {
    let acked = held?.get(q) ?? [];
    held?.delete(q);
    try {
      let batch: FlowOutboxEntry[];
      do {
        batch = await store.take(q, FLOW_BATCH, FLOW_LEASE_MS, acked);
        acked = [];
        await applyBatch(store, batch);
        acked = batch.map((e) => e.raw);
        total += batch.length;
      } while (batch.length === FLOW_BATCH);
      if (held) held.set(q, acked);
      else await store.ack(q, acked);
    } catch (e) {
      // Unacknowledged entries stay in flight: handed out again after their lease.
      if (held && acked.length) held.set(q, acked);
      failure ??= e;
    }
  }
  if (failure) throw failure;
  return total;
}

/** Sends the acknowledgements {@link advanceFlows} held (`held` is emptied). */
export async function flushAcks(store: FlowRecordStore, held: Map<string, string[]>): Promise<void> {
  const all = [...held];
  held.clear();
  await Promise.all(all.map(([q, raws]) => store.ack(q, raws)));
}
