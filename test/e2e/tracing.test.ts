import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  InMemorySpanExporter,
  NodeTracerProvider,
  ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import { type RedisStores } from '../../src/redis/stores';
import { REDIS_STORES } from '../../src/redis/redis.module';
import { normalizeEnqueue } from '../../src/core/job-options';
import { startTestApi, TestApi } from '../support/http';
import { traceHeaders } from '../../clients/typescript/src/tracing';
import { waitUntil } from '../support/timing';

/**
 * OpenTelemetry (docs/tracing.md): POST /jobs takes W3C `traceparent` /
 * `tracestate`, the jobs carry the context (job hash fields tp, ts), and the
 * worker's `sluice.process` spans continue it. Real Redis and PostgreSQL;
 * spans are read from an in-memory exporter registered in this process
 * (the app runs in-process, on the global `@opentelemetry/api`).
 */

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE}-${CALLER}-01`;
const MALFORMED = [
  `00-${TRACE.toUpperCase()}-${CALLER}-01`, // uppercase hex
  `00-${'0'.repeat(32)}-${CALLER}-01`, // all-zero trace id
  `ff-${TRACE}-${CALLER}-01`, // forbidden version
  'garbage',
];

/** The job's stored trace fields, read from its Redis hash. */
async function storedTrace(
  api: TestApi,
  queue: string,
  id: string,
): Promise<{ tp: string | null; ts: string | null }> {
  const store = api.app.get<RedisStores>(REDIS_STORES);
  const [tp, ts] = await store.ctx.redis.hmget(`${store.ctx.keys(queue).base}job:${id}`, 'tp', 'ts');
  return { tp, ts };
}

describe('tracing without an SDK: the job carries the caller context as sent (e2e)', () => {
  let api: TestApi;

  beforeAll(async () => {
    expect(trace.getTracerProvider().getTracer('probe').startSpan('x').isRecording()).toBe(false);
    api = await startTestApi('e2e-trace-off', { ROLE: 'api' });
    expect((await api.http.put('/queues/trace-off').send({ external: true })).status).toBe(200);
  });
  afterAll(async () => {
    await api?.close();
  });

  const claimOne = async () => {
    const r = await api.http.post('/queues/trace-off/claim').send({ workerId: 'ext-trace' });
    expect(r.status).toBe(200);
    expect(r.body.jobs).toHaveLength(1);
    return r.body.jobs[0] as { id: string; traceparent: string | null; tracestate: string | null };
  };

  it('stores a valid traceparent and tracestate and answers them on an external claim', async () => {
    const r = await api.http
      .post('/jobs')
      .set('traceparent', TRACEPARENT)
      .set('tracestate', 'rojo=1, congo=2')
      .send({ type: 'x', queue: 'trace-off' });
    expect(r.status).toBe(201);
    expect(await storedTrace(api, 'trace-off', r.body.id)).toEqual({
      tp: TRACEPARENT,
      ts: 'rojo=1,congo=2',
    });
    const c = await claimOne();
    expect(c).toMatchObject({
      id: r.body.id,
      traceparent: TRACEPARENT,
      tracestate: 'rojo=1,congo=2',
    });
  });

  it('a batch: every job carries the context', async () => {
    const r = await api.http
      .post('/jobs/batch')
      .set('traceparent', TRACEPARENT)
      .send({
        jobs: [
          { type: 'x', queue: 'trace-off' },
          { type: 'x', queue: 'trace-off' },
        ],
      });
    expect(r.status).toBe(201);
    for (const j of r.body.jobs as { id: string }[])
      expect(await storedTrace(api, 'trace-off', j.id)).toEqual({ tp: TRACEPARENT, ts: null });
    for (let i = 0; i < 2; i++) expect((await claimOne()).traceparent).toBe(TRACEPARENT);
  });

  it('no traceparent: the job carries none', async () => {
    const r = await api.http
      .post('/jobs')
      .set('tracestate', 'rojo=1')
      .send({ type: 'x', queue: 'trace-off' });
    expect(r.status).toBe(201);
    expect(await storedTrace(api, 'trace-off', r.body.id)).toEqual({ tp: null, ts: null });
    expect(await claimOne()).toMatchObject({ id: r.body.id, traceparent: null, tracestate: null });
  });

  it.each(MALFORMED)(
    'a malformed traceparent is ignored (201, nothing stored): %s',
    async (header) => {
      const r = await api.http
        .post('/jobs')
        .set('traceparent', header)
        .set('tracestate', 'rojo=1')
        .send({ type: 'x', queue: 'trace-off' });
      expect(r.status).toBe(201);
      expect(await storedTrace(api, 'trace-off', r.body.id)).toEqual({ tp: null, ts: null });
      expect((await claimOne()).traceparent).toBeNull();
    },
  );

  it('an invalid tracestate is dropped, the traceparent kept', async () => {
    const r = await api.http
      .post('/jobs')
      .set('traceparent', TRACEPARENT)
      .set('tracestate', 'Not=A,List')
      .send({ type: 'x', queue: 'trace-off' });
    expect(r.status).toBe(201);
    expect(await storedTrace(api, 'trace-off', r.body.id)).toEqual({ tp: TRACEPARENT, ts: null });
    await claimOne();
  });
});

describe('tracing with an SDK: one trace from enqueue through retries to completion (e2e)', () => {
  let api: TestApi;
  let provider: NodeTracerProvider;
  const exporter = new InMemorySpanExporter();

  beforeAll(async () => {
    provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    // The global provider, an AsyncLocalStorage context manager and the W3C propagators.
    provider.register();
    api = await startTestApi('e2e-trace-on', { ROLE: 'all', WORKER_CONCURRENCY: '2' });
    expect((await api.http.put('/queues/trace-ext').send({ external: true })).status).toBe(200);
  });
  afterAll(async () => {
    await api?.close();
    await provider?.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  const spansOf = (id: string) =>
    exporter.getFinishedSpans().filter((s) => s.attributes['sluice.job.id'] === id);
  const named = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name);
  const byAttempt = (a: ReadableSpan, b: ReadableSpan) =>
    Number(a.attributes['sluice.job.attempt']) - Number(b.attributes['sluice.job.attempt']);

  async function runToEnd(
    send: (req: ReturnType<TestApi['http']['post']>) => ReturnType<TestApi['http']['post']>,
    body: Record<string, unknown>,
  ) {
    const r = await send(api.http.post('/jobs')).send(body);
    expect(r.status).toBe(201);
    const id = r.body.id as string;
    await waitUntil(
      'job completed',
      async () => (await api.http.get(`/jobs/${id}`)).body.status === 'completed',
    );
    // The span ends when the worker's hold ends, before the ack: wait for the last one too.
    await waitUntil('final process span', async () =>
      named(spansOf(id), 'sluice.process').some((s) => s.status.code === SpanStatusCode.OK),
    );
    return id;
  }

  it('enqueue is the child of the caller; three process spans (attempts 1..3) are children of the job context; two failed, the last OK', async () => {
    const id = await runToEnd(
      (req) => req.set('traceparent', TRACEPARENT).set('tracestate', 'rojo=1'),
      {
        type: 'diag.fail',
        queue: 'trace-retry',
        payload: { times: 2, message: 'boom', secret: 'payload-value-never-in-a-span' },
        maxAttempts: 3,
        backoff: { type: 'fixed', delayMs: 50, jitter: 'none' },
      },
    );
    const spans = spansOf(id);
    // One trace throughout.
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([TRACE]));

    const [enqueue] = named(spans, 'sluice.enqueue');
    expect(named(spans, 'sluice.enqueue')).toHaveLength(1);
    expect(enqueue.kind).toBe(SpanKind.PRODUCER);
    expect(enqueue.parentSpanContext?.spanId).toBe(CALLER);
    expect(enqueue.parentSpanContext?.isRemote).toBe(true);
    expect(enqueue.attributes).toMatchObject({
      'sluice.queue': 'trace-retry',
      'messaging.system': 'sluice',
      'messaging.operation.type': 'send',
      'messaging.destination.name': 'trace-retry',
    });
    // The job carries the enqueue span's context (its hash is pruned once completed: see the external claim test).
    const jobContext = enqueue.spanContext().spanId;

    const process = named(spans, 'sluice.process').sort(byAttempt);
    expect(process.map((s) => s.attributes['sluice.job.attempt'])).toEqual([1, 2, 3]);
    for (const [i, p] of process.entries()) {
      expect(p.kind).toBe(SpanKind.CONSUMER);
      expect(p.parentSpanContext?.spanId).toBe(jobContext);
      expect(p.spanContext().traceState?.get('rojo')).toBe('1');
      expect(p.attributes).toMatchObject({
        'sluice.job.id': id,
        'sluice.queue': 'trace-retry',
        'sluice.job.type': 'diag.fail',
        'sluice.job.attempt': i + 1,
        'sluice.job.execution_seq': i + 1,
        'messaging.operation.type': 'process',
        'messaging.destination.name': 'trace-retry',
        'messaging.message.id': id,
      });
    }
    expect(process.map((s) => s.status.code)).toEqual([
      SpanStatusCode.ERROR,
      SpanStatusCode.ERROR,
      SpanStatusCode.OK,
    ]);
    expect(process.map((s) => s.attributes['sluice.job.outcome'])).toEqual([
      'failed',
      'failed',
      'completed',
    ]);
    expect(process.slice(0, 2).map((s) => s.attributes['sluice.job.will_retry'])).toEqual([
      true,
      true,
    ]);
    for (const failed of process.slice(0, 2)) {
      expect(failed.status.message).toBe('boom');
      const [ex] = failed.events.filter((e) => e.name === 'exception');
      expect(ex.attributes).toEqual({ 'exception.type': 'Error', 'exception.message': 'boom' });
    }

    const claims = named(spans, 'sluice.claim').sort(byAttempt);
    expect(claims.map((s) => s.attributes['sluice.job.attempt'])).toEqual([1, 2, 3]);
    for (const c of claims) {
      expect(c.parentSpanContext?.spanId).toBe(jobContext);
      expect(c.attributes).toMatchObject({
        'sluice.claim.external': false,
        'messaging.operation.type': 'receive',
      });
    }
    // Payload values never reach a span.
    expect(JSON.stringify(spans.map((s) => [s.attributes, s.events, s.status]))).not.toContain(
      'payload-value-never-in-a-span',
    );
  });

  it('the TypeScript client helper sends the active context: the enqueue span is the child of the caller span', async () => {
    const caller = trace.getTracer('test').startSpan('caller');
    const headers = context.with(trace.setSpan(context.active(), caller), () => traceHeaders());
    caller.end();
    expect(headers.traceparent).toBe(`00-${caller.spanContext().traceId}-${caller.spanContext().spanId}-01`);
    const id = await runToEnd((req) => req.set(headers as Record<string, string>), { type: 'diag.echo', queue: 'trace-client', payload: {} });
    const [enqueue] = named(spansOf(id), 'sluice.enqueue');
    expect(enqueue.parentSpanContext?.spanId).toBe(caller.spanContext().spanId);
    expect(new Set(spansOf(id).map((s) => s.spanContext().traceId))).toEqual(new Set([caller.spanContext().traceId]));
    // Outside any span: nothing to send.
    expect(traceHeaders()).toEqual({});
  });

  it('no traceparent: the enqueue span starts a new trace and the job continues it', async () => {
    const id = await runToEnd((req) => req, { type: 'diag.echo', queue: 'trace-new', payload: {} });
    const spans = spansOf(id);
    const [enqueue] = named(spans, 'sluice.enqueue');
    expect(enqueue.parentSpanContext).toBeUndefined();
    expect(enqueue.spanContext().traceId).not.toBe(TRACE);
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);
    const [p] = named(spans, 'sluice.process');
    expect(p.parentSpanContext?.spanId).toBe(enqueue.spanContext().spanId);
  });

  it.each(MALFORMED)(
    'a malformed traceparent is ignored: 201, the enqueue span is a root: %s',
    async (header) => {
      const id = await runToEnd((req) => req.set('traceparent', header), {
        type: 'diag.echo',
        queue: 'trace-bad',
        payload: {},
      });
      const [enqueue] = named(spansOf(id), 'sluice.enqueue');
      expect(enqueue.parentSpanContext).toBeUndefined();
      expect(enqueue.spanContext().traceId).not.toBe(TRACE);
    },
  );

  it('an external claim answers the job context and records a claim span; a job without one gets the claim span context', async () => {
    const r = await api.http
      .post('/jobs')
      .set('traceparent', TRACEPARENT)
      .send({ type: 'ext.work', queue: 'trace-ext', payload: {} });
    expect(r.status).toBe(201);
    const [enqueue] = named(spansOf(r.body.id), 'sluice.enqueue');
    const got = await api.http.post('/queues/trace-ext/claim').send({ workerId: 'ext-trace' });
    expect(got.body.jobs[0]).toMatchObject({
      id: r.body.id,
      traceparent: `00-${TRACE}-${enqueue.spanContext().spanId}-01`,
      tracestate: null,
    });
    const [claim] = named(spansOf(r.body.id), 'sluice.claim');
    expect(claim.parentSpanContext?.spanId).toBe(enqueue.spanContext().spanId);
    expect(claim.attributes).toMatchObject({
      'sluice.claim.external': true,
      'sluice.worker.id': 'ext-trace',
      'sluice.job.attempt': 1,
    });

    // A job enqueued without a context (as a schedule's are): the claim starts its trace.
    const store = api.app.get<RedisStores>(REDIS_STORES);
    const [bare] = await store.jobs.enqueue([
      normalizeEnqueue({ type: 'ext.work', queue: 'trace-ext' }, 1 << 20),
    ]);
    const got2 = await api.http.post('/queues/trace-ext/claim').send({ workerId: 'ext-trace' });
    const [claim2] = named(spansOf(bare.id), 'sluice.claim');
    expect(claim2.parentSpanContext).toBeUndefined();
    expect(got2.body.jobs[0]).toMatchObject({
      id: bare.id,
      traceparent: `00-${claim2.spanContext().traceId}-${claim2.spanContext().spanId}-01`,
    });
    expect((await storedTrace(api, 'trace-ext', bare.id)).tp).toBeNull();
  });
});
