import type { DataSource } from 'typeorm';
import { batchMessage, planBatch } from './batch-writer';
import { sendBatch } from '../postgres/pg-batch';
import { batchFault, sqlState } from '../postgres/pg-errors';
import { MirrorBatch, project, StreamEntry } from './projection';
import type { Refusal } from './quarantine';

/** What an isolation wrote and what it gave up on. */
export interface Isolation {
  /** Entries written, in stream order (each as part of a committed sub-batch). */
  written: StreamEntry[];
  /** Entries refused: by PostgreSQL alone in a batch of one, by the projection, or by the encoding; in stream order. */
  refused: Refusal[];
}

/** A refused statement's message with PostgreSQL's detail, for the quarantine table. */
function fullMessage(e: unknown): string {
  const x = e as { message?: unknown; detail?: unknown };
  const m = typeof x?.message === 'string' ? x.message : String(e);
  return typeof x?.detail === 'string' && x.detail ? `${m} (${x.detail})` : m;
}

/**
 * Writes a batch PostgreSQL refused, without the entries it refuses: the
 * batch is tried whole in the idempotent form (`INSERT … ON CONFLICT`,
 * never COPY: parts of it may be written already), and a part that fails
 * is cut in two, the first half written (recursively) before the second,
 * so the entries that go in are committed in stream order and each job's
 * events still apply in order. A part of one entry that fails is refused.
 * Entries the projection cannot read are refused without a round trip;
 * a part whose projection or encoding throws is cut in two the same way.
 *
 * Cost: only on failure. With k bad entries among n, about 2·k·log2(n/k)
 * round trips (one bad entry among 1,000: ~20); all n bad: ~2n.
 *
 * @param known the batch's projection, and the error its idempotent form
 *   already met (so the whole batch is not sent again); without `error` the
 *   whole batch is tried first.
 * @throws the error of a part when it says PostgreSQL is unavailable
 *   (src/postgres/pg-errors.ts): nothing is refused then, and what was written
 *   is written again (idempotently) on the retry.
 */
export async function isolate(db: DataSource, entries: StreamEntry[], known?: { batch?: MirrorBatch; error?: unknown }): Promise<Isolation> {
  const written: StreamEntry[] = [];
  const refused: Refusal[] = [];
  const step = async (part: StreamEntry[], batch?: MirrorBatch, knownError?: unknown): Promise<void> => {
    let b: MirrorBatch;
    let message;
    try {
      b = batch ?? project(part);
      message = batchMessage(planBatch(b));
    } catch (e) {
      if (part.length === 1) refused.push({ entry: part[0], code: 'encoding', message: fullMessage(e) });
      else await halves(part);
      return;
    }
    let accepted = part;
    if (b.rejected.length) {
      const out = new Set<StreamEntry>();
      for (const r of b.rejected) {
        out.add(r.entry);
        refused.push({ entry: r.entry, code: 'projection', message: r.reason });
      }
      accepted = part.filter((e) => !out.has(e));
      if (!accepted.length) return;
    }
    let error = knownError;
    if (error === undefined) {
      try {
        await sendBatch(db, message);
        written.push(...accepted);
        return;
      } catch (e) {
        error = e;
      }
    }
    const fault = batchFault(error);
    if (fault === 'unavailable') throw error;
    if (accepted.length === 1) refused.push({ entry: accepted[0], code: sqlState(error) ?? 'unknown', message: fullMessage(error), fault });
    else await halves(accepted);
  };
  const halves = async (part: StreamEntry[]) => {
    const mid = part.length >>> 1;
    await step(part.slice(0, mid));
    await step(part.slice(mid));
  };
  await step(entries, known?.batch, known?.error);
  // Refusals were pushed in the order the parts ran (stream order) except the projection's, which come first per part.
  const order = new Map(entries.map((e, i) => [e, i]));
  refused.sort((a, b) => (order.get(a.entry) ?? 0) - (order.get(b.entry) ?? 0));
  return { written, refused };
}
