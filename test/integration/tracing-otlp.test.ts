import { createServer, IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { normalizeEnqueue } from '../../src/core/job-options';
import { killAll, SluiceProcess, startSluice } from '../support/process';
import { openStore, TestStore } from '../support/redis';
import { waitUntil } from '../support/timing';

/**
 * The SDK of src/telemetry/tracing.ts in a real `node dist/main.js`: with
 * OTEL_EXPORTER_OTLP_ENDPOINT set, spans go to the collector over OTLP/HTTP,
 * and those still batched are flushed on SIGTERM. The collector here is a
 * plain HTTP server that keeps what it receives (OTLP/HTTP JSON).
 */

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const QUEUE = 'otlp';

let t: TestStore;
let collector: Server;
let received: { path: string; body: Buffer }[] = [];
let proc: SluiceProcess | undefined;

beforeAll(async () => {
  t = await openStore('otlp');
  collector = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body: Buffer.concat(chunks) });
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  await killAll([proc]);
  await new Promise((r) => collector.close(r));
  await t.close();
});

it('exports the worker spans to OTEL_EXPORTER_OTLP_ENDPOINT and flushes them on SIGTERM', async () => {
  const port = (collector.address() as AddressInfo).port;
  received = [];
  proc = await startSluice({
    REDIS_PREFIX: t.prefix,
    QUEUES: QUEUE,
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
    OTEL_SERVICE_NAME: 'sluice-otlp-test',
    // JSON rather than protobuf, so this test can read what the collector got.
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    // Only the flush at shutdown can deliver within this test.
    OTEL_BSP_SCHEDULE_DELAY: '600000',
  });
  expect(proc.output()).toMatch(/"endpoint":"http:\/\/127\.0\.0\.1:\d+\/v1\/traces".*tracing: exporting spans/);
  const [job] = await t.store.enqueue([normalizeEnqueue({ type: 'diag.echo', queue: QUEUE, payload: { n: 1 } }, 1 << 20)], {
    traceparent: `00-${TRACE}-b7ad6b7169203331-01`,
    tracestate: null,
  });
  await waitUntil('job completed', async () => (await t.redis.hget(`${t.keys(QUEUE).base}job:${job.id}`, 's')) !== 'waiting' && (await t.redis.zcard(t.keys(QUEUE).active)) === 0);
  expect(received).toEqual([]);
  proc.kill('SIGTERM');
  expect((await proc.exited).code).toBe(0);
  expect(received.map((r) => r.path)).toContain('/v1/traces');
  type OtlpValue = { stringValue?: string };
  type OtlpSpan = { name: string; traceId: string; parentSpanId?: string; attributes: { key: string; value: OtlpValue }[] };
  const batches = received.map((r) => JSON.parse(r.body.toString()) as { resourceSpans: { resource: { attributes: { key: string; value: OtlpValue }[] }; scopeSpans: { spans: OtlpSpan[] }[] }[] });
  const resources = batches.flatMap((b) => b.resourceSpans);
  expect(resources[0].resource.attributes).toContainEqual({ key: 'service.name', value: { stringValue: 'sluice-otlp-test' } });
  const spans = resources.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
  const ofJob = spans.filter((s) => s.attributes.some((a) => a.key === 'sluice.job.id' && a.value.stringValue === job.id));
  expect(ofJob.map((s) => s.name).sort()).toEqual(['sluice.claim', 'sluice.process']);
  for (const s of ofJob) expect([s.traceId, s.parentSpanId]).toEqual([TRACE, 'b7ad6b7169203331']);
});

it('without an endpoint nothing is loaded: no tracing line', async () => {
  const p = await startSluice({ REDIS_PREFIX: t.prefix, QUEUES: QUEUE });
  try {
    expect(p.output()).not.toMatch(/tracing:/);
  } finally {
    p.kill('SIGTERM');
    await p.exited;
  }
});
