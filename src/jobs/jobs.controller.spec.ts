import type { FastifyReply, FastifyRequest } from 'fastify';
import { ANONYMOUS_ADMIN, PRINCIPAL } from '../auth/principal';
import type { Job } from '../core/job';
import type { EnqueueResult, JobStore, QueueStore } from '../core/ports';
import type { NormalizedEnqueue } from '../core/job-options';
import type { HistoryQueries } from '../history';
import type { HandlerRegistry } from '../handlers/handler-registry';
import type { SluiceConfig } from '../config/config';
import { JobsController } from './jobs.controller';
import { JobsService } from './jobs.service';
import type { WaitingCap } from './waiting-cap';
import { EnqueueJobPipe } from './dto/enqueue-body.pipe';

/** The job the fake store holds (what a debounced or replayed enqueue reads back). */
const stored: Job = {
  id: '0193a6f4-1c2b-7d3e-8f40-5a6b7c8d9e0f', queue: 'q', type: 't', payload: { v: 2 }, status: 'delayed', priority: 0, attempts: 0, maxAttempts: 3,
  backoff: { type: 'exponential', delayMs: 2000, maxDelayMs: 3_600_000, jitter: 'equal' }, timeoutMs: 600_000, idempotencyKey: null, concurrencyKey: 'c-1', flowId: null, flowRef: null,
  progress: null, result: null, lastError: null, workerId: null, createdAt: 1_000, runAt: 6_000, startedAt: null, finishedAt: null, updatedAt: 2_000,
  executionSeq: 0, cancelRequested: false,
};

/** A controller over a JobsService whose JobStore answers `result` and records what it was given. */
function controllerAnswering(result: Partial<EnqueueResult>) {
  const given: NormalizedEnqueue[][] = [];
  const store = {
    enqueue: async (jobs: NormalizedEnqueue[]) => (given.push(jobs), jobs.map(() => ({ id: stored.id, status: 'waiting', replayed: false, ...result }))),
    getJob: async () => stored,
  } as unknown as JobStore;
  const handlers = { map: new Map([['t', {}]]), types: () => ['t'] } as unknown as HandlerRegistry;
  const service = new JobsService({ maxPayloadBytes: 1 << 20 } as SluiceConfig, store, {} as QueueStore, {} as HistoryQueries, handlers, { admit: () => undefined } as unknown as WaitingCap);
  return { controller: new JobsController(service), given };
}

/** A reply that records its status and headers. */
function reply() {
  const r = { statusCode: 0, headers: {} as Record<string, string> };
  const api = {
    status: (s: number) => ((r.statusCode = s), api),
    header: (k: string, v: string) => ((r.headers[k] = v), api),
  };
  return { r, reply: api as unknown as FastifyReply };
}
const req = { headers: {}, [PRINCIPAL]: ANONYMOUS_ADMIN } as unknown as FastifyRequest;
const created = { createdAt: 1_000, runAt: 1_000, maxAttempts: 3, timeoutMs: 600_000, backoff: 'exponential|2000|3600000|equal' };

describe('POST /jobs answers (JobsController.create)', () => {
  it('a new job: 201, no flag header, rendered from the enqueue (concurrencyKey included)', async () => {
    const { controller, given } = controllerAnswering({ created });
    const { r, reply: rep } = reply();
    const body = new EnqueueJobPipe().transform({ type: 't', queue: 'q', concurrencyKey: 'c-1', debounce: { key: 'd', windowMs: 5000, maxWaitMs: 60_000 } });
    const job = await controller.create(body, rep, req);
    expect(r).toEqual({ statusCode: 201, headers: {} });
    expect(job).toMatchObject({ id: stored.id, status: 'waiting', concurrencyKey: 'c-1', createdAt: '1970-01-01T00:00:01.000Z' });
    // The store gets the key and the debounce as normalized.
    expect(given[0][0]).toMatchObject({ queue: 'q', concurrencyKey: 'c-1', debounce: { key: 'd', windowMs: 5000, maxWaitMs: 60_000 } });
  });

  it('a debounced enqueue: 200 with Sluice-Debounced: true and the job as the update left it (first createdAt, new runAt, updatedAt)', async () => {
    const { controller } = controllerAnswering({ debounced: true, status: 'delayed', created: { ...created, runAt: 9_000, updatedAt: 4_000 } });
    const { r, reply: rep } = reply();
    const body = new EnqueueJobPipe().transform({ type: 't', queue: 'q', payload: { v: 3 }, concurrencyKey: 'c-2', debounce: { key: 'd', windowMs: 5000 } });
    const job = await controller.create(body, rep, req);
    expect(r).toEqual({ statusCode: 200, headers: { 'sluice-debounced': 'true' } });
    expect(job).toMatchObject({
      id: stored.id, status: 'delayed', payload: { v: 3 }, concurrencyKey: 'c-2', attempts: 0,
      createdAt: '1970-01-01T00:00:01.000Z', runAt: '1970-01-01T00:00:09.000Z', updatedAt: '1970-01-01T00:00:04.000Z',
    });
  });

  it('a debounced enqueue the store did not resolve: the job is read back', async () => {
    const { controller } = controllerAnswering({ debounced: true });
    const { r, reply: rep } = reply();
    const job = await controller.create(new EnqueueJobPipe().transform({ type: 't', queue: 'q', debounce: { key: 'd', windowMs: 5000 } }), rep, req);
    expect(r.statusCode).toBe(200);
    expect(job).toMatchObject({ id: stored.id, status: 'delayed', payload: { v: 2 }, runAt: '1970-01-01T00:00:06.000Z' });
  });

  it('an idempotent replay: 200 with Idempotent-Replayed: true (unchanged)', async () => {
    const { controller } = controllerAnswering({ replayed: true });
    const { r, reply: rep } = reply();
    await controller.create(new EnqueueJobPipe().transform({ type: 't', queue: 'q', idempotencyKey: 'i' }), rep, req);
    expect(r).toEqual({ statusCode: 200, headers: { 'idempotent-replayed': 'true' } });
  });

  it('debounce with idempotencyKey: 400 naming debounce, nothing enqueued', async () => {
    const { controller, given } = controllerAnswering({ created });
    const { reply: rep } = reply();
    const body = new EnqueueJobPipe().transform({ type: 't', idempotencyKey: 'i', debounce: { key: 'd', windowMs: 100 } });
    await expect(controller.create(body, rep, req)).rejects.toMatchObject({ code: 'validation_failed', details: [{ path: 'debounce', message: expect.stringMatching(/idempotencyKey/) }] });
    expect(given).toEqual([]);
  });
});
