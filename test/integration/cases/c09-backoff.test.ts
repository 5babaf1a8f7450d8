import type { BackoffSpec } from '../../../src/core/backoff';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { killAll, SluiceProcess, startSluice } from '../../support/process';
import { openStore, TestStore } from '../../support/redis';
import { events, StreamEvent, waitUntil, workerIdOf } from '../../support/timing';

/**
 * C9 — Backoff follows the documented formula (CASES.md). A real worker
 * process runs diag.fail; the retries' start times are read from the events
 * stream (Redis clock): each `claimed` must come ≈d after the preceding
 * `retry_scheduled` (the failure), ±150 ms.
 */
const TOLERANCE_MS = 150;
const QUEUE = 'c09';

let t: TestStore;
let worker: SluiceProcess | undefined;

beforeAll(async () => {
  t = await openStore('c09');
  worker = await startSluice({ REDIS_PREFIX: t.prefix, QUEUES: QUEUE });
  await workerIdOf(worker);
});
afterAll(async () => {
  await killAll([worker]);
  await t.close();
});

async function enqueue(input: Parameters<typeof normalizeEnqueue>[0]): Promise<string> {
  const [r] = await t.store.enqueue([normalizeEnqueue({ queue: QUEUE, ...input }, 524288)]);
  return r.id;
}

/** Waits until the job is in the DLQ and returns its events. */
async function untilFailed(id: string, timeoutMs: number): Promise<StreamEvent[]> {
  await waitUntil(`job ${id} failed`, async () => (await t.store.getJob(QUEUE, id))?.status === 'failed', timeoutMs);
  return events(t.redis, t.keys(QUEUE).events, id);
}

/** For each failure that scheduled a retry: [ms the job was set to wait, ms until the next claim]. */
function retryGaps(ev: StreamEvent[]): { scheduledMs: number; startedAfterMs: number }[] {
  const out: { scheduledMs: number; startedAfterMs: number }[] = [];
  ev.forEach((e, i) => {
    if (e.e !== 'retry_scheduled') return;
    const next = ev.slice(i + 1).find((x) => x.e === 'claimed');
    expect(next).toBeDefined();
    out.push({ scheduledMs: Number(e.ra) - e.at, startedAfterMs: (next as StreamEvent).at - e.at });
  });
  return out;
}

test('C9: exponential backoff 1000 ms without jitter: retries start 1, 2 and 4 s after each failure (±150 ms)', async () => {
  const id = await enqueue({
    type: 'diag.fail',
    payload: { message: 'boom' },
    maxAttempts: 4,
    backoff: { type: 'exponential', delayMs: 1000, maxDelayMs: 3_600_000, jitter: 'none' },
  });
  const ev = await untilFailed(id, 20000);
  expect(ev.map((e) => e.e)).toEqual([
    'enqueued', 'claimed',
    'retry_scheduled', 'promoted', 'claimed',
    'retry_scheduled', 'promoted', 'claimed',
    'retry_scheduled', 'promoted', 'claimed',
    'failed',
  ]);
  const gaps = retryGaps(ev);
  expect(gaps.map((g) => g.scheduledMs)).toEqual([1000, 2000, 4000]);
  gaps.forEach((g, i) => {
    const want = 1000 * 2 ** i;
    expect({ retry: i + 1, startedAfterMs: g.startedAfterMs, ok: Math.abs(g.startedAfterMs - want) <= TOLERANCE_MS })
      .toEqual({ retry: i + 1, startedAfterMs: g.startedAfterMs, ok: true });
  });
  const job = await t.store.getJob(QUEUE, id);
  expect(job).toMatchObject({ status: 'failed', attempts: 4, maxAttempts: 4, lastError: 'boom' });
  expect(ev.filter((e) => e.e === 'claimed').map((e) => Number(e.a))).toEqual([1, 2, 3, 4]);
});

test('C9: without backoff.delayMs the documented default (2000 ms) applies, never zero', async () => {
  // delayMs omitted, jitter none: exactly the default 2000 ms.
  const noDelay = await enqueue({
    type: 'diag.fail',
    maxAttempts: 2,
    backoff: { type: 'exponential', jitter: 'none' } as BackoffSpec,
  });
  // fixed, delayMs omitted: also the default 2000 ms.
  const fixed = await enqueue({ type: 'diag.fail', maxAttempts: 2, backoff: { type: 'fixed', jitter: 'none' } as BackoffSpec });
  // No backoff at all: exponential 2000 with equal jitter, so the first retry waits 1000..2000 ms.
  const none = await enqueue({ type: 'diag.fail', maxAttempts: 2 });

  for (const id of [noDelay, fixed, none]) {
    expect((await t.store.getJob(QUEUE, id))?.backoff.delayMs).toBe(2000);
  }
  expect((await t.store.getJob(QUEUE, none))?.backoff).toEqual({ type: 'exponential', delayMs: 2000, maxDelayMs: 3_600_000, jitter: 'equal' });

  for (const id of [noDelay, fixed]) {
    const [g] = retryGaps(await untilFailed(id, 10000));
    expect(g.scheduledMs).toBe(2000);
    expect({ id, startedAfterMs: g.startedAfterMs, ok: Math.abs(g.startedAfterMs - 2000) <= TOLERANCE_MS })
      .toEqual({ id, startedAfterMs: g.startedAfterMs, ok: true });
  }
  const [g] = retryGaps(await untilFailed(none, 10000));
  expect(g.scheduledMs).toBeGreaterThanOrEqual(1000);
  expect(g.scheduledMs).toBeLessThanOrEqual(2000);
  expect(g.startedAfterMs).toBeGreaterThanOrEqual(g.scheduledMs);
  expect(g.startedAfterMs).toBeLessThanOrEqual(g.scheduledMs + TOLERANCE_MS);
});
