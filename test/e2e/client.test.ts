import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { context, createTraceState, propagation, ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  ConflictError,
  ForbiddenError,
  LeaseLostError,
  NotFoundError,
  RateLimitedError,
  SluiceClient,
  SluiceError,
  TimeoutError,
  UnauthorizedError,
  UnavailableError,
  ValidationFailedError,
  type SluiceClientOptions,
} from '../../clients/typescript/src';
import { startTestApi, type TestApi } from '../support/http';
import { waitUntil } from '../support/timing';

/**
 * @sluice/client (clients/typescript) against a real server: every call,
 * typed errors from the envelope, retries (through a local proxy that
 * answers 503/429 or never answers), timeouts, API keys, trace context.
 */

/** What the proxy does with one request: forward it, answer it, or never answer. */
type Plan = 'forward' | 'hang' | { status: number; headers?: Record<string, string>; body?: unknown };

interface Proxy {
  url: string;
  /** Requests seen, in order. */
  seen: { method: string; path: string; at: number; headers: IncomingHttpHeaders }[];
  /** Decides per request (default: forward). */
  plan: (method: string, path: string) => Plan;
  close(): Promise<void>;
}

async function startProxy(upstream: string): Promise<Proxy> {
  const up = new URL(upstream);
  const p: Proxy = { url: '', seen: [], plan: () => 'forward', close: async () => {} };
  const server: Server = createServer((req, res) => {
    p.seen.push({ method: req.method!, path: req.url!, at: Date.now(), headers: req.headers });
    const plan = p.plan(req.method!, req.url!);
    if (plan === 'hang') return void req.resume();
    if (plan !== 'forward') {
      req.resume();
      res.writeHead(plan.status, { 'content-type': 'application/json', ...plan.headers });
      return void res.end(JSON.stringify(plan.body ?? {}));
    }
    const fwd = httpRequest({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    fwd.on('error', () => res.destroy());
    req.pipe(fwd);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  p.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  p.close = async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  };
  return p;
}

const envelope = (code: string, message: string) => ({ error: { code, message, details: [], requestId: 'proxy' } });

describe('SluiceClient (e2e)', () => {
  let api: TestApi;
  let proxy: Proxy;
  let client: SluiceClient;
  const via = (opts: Partial<SluiceClientOptions> = {}) => new SluiceClient({ baseUrl: proxy.url, ...opts });

  beforeAll(async () => {
    api = await startTestApi('e2e-client', { ROLE: 'api,audit' });
    proxy = await startProxy(api.url);
    client = new SluiceClient({ baseUrl: api.url });
  });
  afterAll(async () => {
    await proxy?.close();
    await api?.close();
  });
  beforeEach(() => {
    proxy.seen.length = 0;
    proxy.plan = () => 'forward';
  });

  it('enqueue, get, events, executions, logs; an idempotency key replays the same job', async () => {
    const { job, replayed } = await client.enqueue({ type: 'diag.echo', payload: { n: 1 }, queue: 'cl-basic', priority: 'high' });
    expect(replayed).toBe(false);
    expect(job).toMatchObject({ queue: 'cl-basic', type: 'diag.echo', payload: { n: 1 }, priority: 10, status: 'waiting' });
    expect(await client.get(job.id)).toMatchObject({ id: job.id, status: 'waiting' });

    const first = await client.enqueue({ type: 'diag.echo', queue: 'cl-basic', payload: { k: 1 } }, { idempotencyKey: 'order-42' });
    const again = await client.enqueue({ type: 'diag.echo', queue: 'cl-basic', payload: { k: 1 } }, { idempotencyKey: 'order-42' });
    expect([first.replayed, again.replayed]).toEqual([false, true]);
    expect(again.job.id).toBe(first.job.id);
    expect(again.job.idempotencyKey).toBe('order-42');

    const events = await waitUntil('enqueued event', async () => {
      const items = await client.events(job.id);
      return items.length ? items : undefined;
    });
    expect(events[0]).toMatchObject({ event: 'enqueued', to: 'waiting' });
    expect(await client.executions(job.id)).toEqual([]);
    expect(await client.logs(job.id)).toEqual([]);
  });

  it('enqueueBatch({minimal: true}) sends Prefer: return=minimal and answers {id, status} in order', async () => {
    const jobs = await client.enqueueBatch(
      Array.from({ length: 3 }, (_, i) => ({ type: 'diag.echo', queue: 'cl-minimal', payload: { i }, ...(i === 2 ? { delayMs: 60_000 } : {}) })),
      { minimal: true },
    );
    expect(jobs.map((j) => Object.keys(j).sort())).toEqual([['id', 'status'], ['id', 'status'], ['id', 'status']]);
    expect(jobs.map((j) => j.status)).toEqual(['waiting', 'waiting', 'delayed']);
    expect((await client.get(jobs[1].id)).payload).toEqual({ i: 1 });
  });

  it('enqueueBatch enqueues all; list follows nextCursor over more than two pages', async () => {
    const jobs = await client.enqueueBatch(Array.from({ length: 7 }, (_, i) => ({ type: 'diag.echo', queue: 'cl-list', payload: { i } })));
    expect(jobs.map((j) => j.payload)).toEqual(Array.from({ length: 7 }, (_, i) => ({ i })));
    // The list is served from PostgreSQL: wait for the mirror writer.
    await waitUntil('all listed', async () => (await client.listPage({ queue: 'cl-list', limit: 500 })).items.length === 7 || undefined);

    const counting = via();
    const seen: string[] = [];
    for await (const j of counting.list({ queue: 'cl-list', limit: 3 })) seen.push(j.id);
    // Newest first, each job once, from three pages (3 + 3 + 1).
    expect(seen).toEqual(jobs.map((j) => j.id).reverse());
    expect(proxy.seen.filter((r) => r.path.startsWith('/jobs?'))).toHaveLength(3);
    const page = await client.listPage({ queue: 'cl-list', limit: 3 });
    expect(page.items).toHaveLength(3);
    expect(typeof page.nextCursor).toBe('string');
  });

  it('cancel and retry; typed errors for 404, 400 with details, 409 and lease_lost', async () => {
    const { job } = await client.enqueue({ type: 'diag.echo', queue: 'cl-cancel' });
    expect(await client.cancel(job.id)).toMatchObject({ id: job.id, status: 'cancelled' });
    const conflict = await client.cancel(job.id).catch((e) => e);
    expect(conflict).toBeInstanceOf(ConflictError);
    expect(conflict).toMatchObject({ status: 409, code: 'conflict' });
    expect(await client.retry(job.id, { payload: { again: true } })).toMatchObject({ status: 'waiting', attempts: 0, payload: { again: true } });

    const missing = await client.get('0193a6f4-1c2b-7d3e-8f40-5a6b7c8d9e0f').catch((e) => e);
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing).toBeInstanceOf(SluiceError);
    expect(missing).toMatchObject({ status: 404, code: 'not_found', requestId: expect.any(String) });

    const invalid = await client.enqueue({ type: 'diag.echo', priority: 1000 }).catch((e) => e);
    expect(invalid).toBeInstanceOf(ValidationFailedError);
    expect(invalid.status).toBe(400);
    expect(invalid.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: 'priority' })]));

    const reused = await client.enqueue({ type: 'diag.echo', queue: 'cl-cancel', payload: { a: 1 } }, { idempotencyKey: 'k-409' }).then(() => client.enqueue({ type: 'diag.echo', queue: 'cl-cancel', payload: { a: 2 } }, { idempotencyKey: 'k-409' })).catch((e) => e);
    expect(reused).toBeInstanceOf(ConflictError);

    await client.queues.configure('cl-ext', { external: true });
    await client.enqueue({ type: 'anything', queue: 'cl-ext' });
    const [claimed] = await client.claim('cl-ext', { workerId: 'cl-test', leaseMs: 5000 });
    const lost = await client.complete(claimed.id, { lockToken: 'not-the-token' }).catch((e) => e);
    expect(lost).toBeInstanceOf(LeaseLostError);
    expect(lost).toBeInstanceOf(ConflictError);
    expect(lost).toMatchObject({ status: 409, code: 'lease_lost' });
    expect(await client.complete(claimed.id, { lockToken: claimed.lockToken, result: { ok: 1 } })).toMatchObject({ status: 'completed', result: { ok: 1 } });
  });

  it('queues and the dead-letter queue', async () => {
    expect(await client.queues.configure('cl-dlq', { external: true, maxConcurrency: 5 })).toMatchObject({ name: 'cl-dlq', external: true, maxConcurrency: 5 });
    expect((await client.queues.pause('cl-dlq')).paused).toBe(true);
    expect((await client.queues.resume('cl-dlq')).paused).toBe(false);
    expect(await client.queues.list()).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'cl-dlq' })]));
    await expect(client.queues.get('cl-nope')).rejects.toBeInstanceOf(NotFoundError);

    for (const n of [1, 2, 3]) await client.enqueue({ type: 'x', queue: 'cl-dlq', payload: { n } });
    const claimed = await client.claim('cl-dlq', { workerId: 'cl-test', max: 3 });
    expect(claimed).toHaveLength(3);
    for (const j of claimed) expect(await client.fail(j.id, { lockToken: j.lockToken, error: { message: 'boom' }, retryable: false })).toMatchObject({ status: 'failed' });
    await waitUntil('in the DLQ', async () => (await client.dlq.listPage({ queue: 'cl-dlq' })).items.length === 3 || undefined);
    const failed: string[] = [];
    for await (const j of client.dlq.list({ queue: 'cl-dlq', limit: 2 })) failed.push(j.id);
    expect(failed.sort()).toEqual(claimed.map((j) => j.id).sort());
    expect(await client.dlq.retryAll({ queue: 'cl-dlq' })).toBe(3);
    const again = await client.claim('cl-dlq', { workerId: 'cl-test', max: 3 });
    for (const j of again) await client.fail(j.id, { lockToken: j.lockToken, error: { message: 'boom' }, retryable: false });
    expect(await client.dlq.purge({ queue: 'cl-dlq' })).toBe(3);
  });

  it('flow control per key: concurrencyKey and debounce on enqueue, the queue fields, queues.keys / setKeyOverride / deleteKeyOverride', async () => {
    const q = await client.queues.configure('cl-keys', { keyConcurrency: 2, keyRateLimit: { max: 10, durationMs: 1000 }, fairness: 'round_robin', agingMs: 2000 });
    expect(q).toMatchObject({ keyConcurrency: 2, keyRateLimit: { max: 10, durationMs: 1000 }, fairness: 'round_robin', agingMs: 2000 });
    const { job, replayed, debounced } = await client.enqueue({ type: 'diag.echo', queue: 'cl-keys', concurrencyKey: 'tenant/1' });
    expect([job.concurrencyKey, replayed, debounced]).toEqual(['tenant/1', false, false]);
    const withDebounce = await client.enqueue({ type: 'diag.echo', queue: 'cl-keys', debounce: { key: 'reindex', windowMs: 60_000 } });
    expect(withDebounce.debounced).toBe(false);
    const again = await client.enqueue({ type: 'diag.echo', queue: 'cl-keys', payload: { v: 2 }, debounce: { key: 'reindex', windowMs: 60_000 } });
    expect([again.debounced, again.replayed, again.job.id, again.job.payload]).toEqual([true, false, withDebounce.job.id, { v: 2 }]);
    const bad = await client.enqueue({ type: 'diag.echo', debounce: { key: 'k', windowMs: 10 } }).catch((e) => e);
    expect(bad).toBeInstanceOf(ValidationFailedError);
    expect(bad.details).toEqual([expect.objectContaining({ path: 'debounce.windowMs' })]);

    // The key has a `/`: the client encodes it.
    const set = await client.queues.setKeyOverride('cl-keys', 'tenant/1', { concurrency: 5 });
    expect(set).toEqual({ key: 'tenant/1', waiting: 1, active: 0, overrides: { concurrency: 5, rateLimit: null }, limits: { concurrency: 5, rateLimit: { max: 10, durationMs: 1000 } } });
    expect(await client.queues.keys('cl-keys')).toEqual([set]);
    expect(await client.queues.keys('cl-keys', { limit: 1 })).toHaveLength(1);
    expect(await client.queues.deleteKeyOverride('cl-keys', 'tenant/1')).toMatchObject({ key: 'tenant/1', overrides: null, limits: { concurrency: 2 } });
    await expect(client.queues.keys('cl-nope')).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.queues.setKeyOverride('cl-nope', 'k', { concurrency: 1 })).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.queues.setKeyOverride('cl-keys', 'k', { concurrency: 0 })).rejects.toBeInstanceOf(ValidationFailedError);
    // `.` and `..` would leave as another route (dot segments): refused before sending.
    const counting = via();
    for (const key of ['.', '..']) {
      await expect(counting.queues.setKeyOverride('cl-keys', key, { concurrency: 1 })).rejects.toMatchObject({ name: 'ValidationFailedError', status: 0, details: [{ path: 'key' }] });
      await expect(counting.queues.deleteKeyOverride('cl-keys', key)).rejects.toBeInstanceOf(ValidationFailedError);
    }
    expect(proxy.seen).toEqual([]);
    expect((await client.queues.setKeyOverride('cl-keys', '...', { concurrency: 1 })).key).toBe('...');
  });

  describe('retries', () => {
    it('503 with Retry-After: waits that long, keeps the X-Request-Id, then succeeds', async () => {
      const { job } = await client.enqueue({ type: 'diag.echo', queue: 'cl-retry' });
      let refuse = 2;
      proxy.plan = () => (refuse-- > 0 ? { status: 503, headers: { 'retry-after': '1' }, body: envelope('unavailable', 'down') } : 'forward');
      const t0 = Date.now();
      expect((await via().get(job.id)).id).toBe(job.id);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(1900);
      expect(proxy.seen).toHaveLength(3);
      for (let i = 1; i < 3; i++) expect(proxy.seen[i].at - proxy.seen[i - 1].at).toBeGreaterThanOrEqual(950);
      // One id for the call, sent with each attempt (the server's logs tie them together).
      expect([...new Set(proxy.seen.map((r) => r.headers['x-request-id']))]).toEqual([expect.stringMatching(/^[0-9a-f-]{36}$/)]);
    });

    it('429 without Retry-After: jittered exponential backoff (short), then the typed error once the retries are spent', async () => {
      proxy.plan = () => ({ status: 429, body: envelope('rate_limited', 'slow down') });
      const delays: number[] = [];
      const c = via({ retries: { max: 3, baseMs: 50, maxMs: 1000 }, onRetry: (i) => delays.push(i.delayMs) });
      const err = await c.get('0193a6f4-1c2b-7d3e-8f40-5a6b7c8d9e0f').catch((e) => e);
      expect(err).toBeInstanceOf(RateLimitedError);
      expect(err).toMatchObject({ status: 429, code: 'rate_limited', retryAfterMs: null, message: 'slow down' });
      expect(proxy.seen).toHaveLength(4);
      // Full jitter: attempt n waits within [0, 50·2^(n−1)] ms.
      delays.forEach((d, i) => expect(d).toBeLessThanOrEqual(50 * 2 ** i));
    });

    it('a Retry-After longer than maxMs is not waited out: the error carries retryAfterMs', async () => {
      proxy.plan = () => ({ status: 429, headers: { 'retry-after': '60' }, body: envelope('rate_limited', 'later') });
      const t0 = Date.now();
      const err = await via().get('0193a6f4-1c2b-7d3e-8f40-5a6b7c8d9e0f').catch((e) => e);
      expect(err).toBeInstanceOf(RateLimitedError);
      expect(err.retryAfterMs).toBe(60_000);
      expect(Date.now() - t0).toBeLessThan(1000);
      expect(proxy.seen).toHaveLength(1);
    });

    it('enqueue: without an idempotency key a 503 is not retried (it could duplicate the job); with one it is', async () => {
      let refuse = 1;
      proxy.plan = (m) => (m === 'POST' && refuse-- > 0 ? { status: 503, headers: { 'retry-after': '1' }, body: envelope('unavailable', 'down') } : 'forward');
      const c = via();
      const err = await c.enqueue({ type: 'diag.echo', queue: 'cl-retry' }).catch((e) => e);
      expect(err).toBeInstanceOf(UnavailableError);
      expect(err).toMatchObject({ status: 503, retryAfterMs: 1000 });
      expect(proxy.seen).toHaveLength(1);

      refuse = 1;
      proxy.seen.length = 0;
      const { job } = await c.enqueue({ type: 'diag.echo', queue: 'cl-retry' }, { idempotencyKey: 'retry-me' });
      expect(job.idempotencyKey).toBe('retry-me');
      expect(proxy.seen).toHaveLength(2);
      // 429 is refused before anything ran: retried even without a key.
      refuse = 0;
      let limited = 1;
      proxy.plan = () => (limited-- > 0 ? { status: 429, headers: { 'retry-after': '1' }, body: envelope('rate_limited', 'wait') } : 'forward');
      proxy.seen.length = 0;
      expect((await c.enqueue({ type: 'diag.echo', queue: 'cl-retry' })).replayed).toBe(false);
      expect(proxy.seen).toHaveLength(2);
    });

    it('a request timeout: TimeoutError; a GET is retried, an enqueue without a key is not', async () => {
      proxy.plan = () => 'hang';
      const c = via({ timeoutMs: 300, retries: { max: 2, baseMs: 10, maxMs: 100 } });
      const t0 = Date.now();
      const err = await c.get('0193a6f4-1c2b-7d3e-8f40-5a6b7c8d9e0f').catch((e) => e);
      expect(err).toBeInstanceOf(TimeoutError);
      expect(err).toMatchObject({ status: 0, code: 'timeout' });
      expect(proxy.seen).toHaveLength(3);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
      expect(Date.now() - t0).toBeLessThan(3000);

      proxy.seen.length = 0;
      await expect(c.enqueue({ type: 'diag.echo', queue: 'cl-retry' })).rejects.toBeInstanceOf(TimeoutError);
      expect(proxy.seen).toHaveLength(1);
    });

    it("the caller's AbortSignal ends a call and its retry waits", async () => {
      proxy.plan = () => ({ status: 503, headers: { 'retry-after': '5' }, body: envelope('unavailable', 'down') });
      const t0 = Date.now();
      const err = await via().get('0193a6f4-1c2b-7d3e-8f40-5a6b7c8d9e0f', { signal: AbortSignal.timeout(300) }).catch((e) => e);
      expect(err.name).toBe('TimeoutError');
      expect(err).not.toBeInstanceOf(SluiceError);
      expect(Date.now() - t0).toBeLessThan(2000);
    });
  });

  describe('trace context', () => {
    beforeAll(() => {
      context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
      propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    });
    afterAll(() => {
      propagation.disable();
      context.disable();
    });

    it('enqueue sends the active span context as traceparent/tracestate; none without one', async () => {
      const traceId = randomBytes(16).toString('hex');
      const spanId = randomBytes(8).toString('hex');
      const active = trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true, traceState: createTraceState('sluice=t1') });
      const c = via();
      await context.with(active, () => c.enqueue({ type: 'diag.echo', queue: 'cl-trace' }));
      await context.with(active, () => c.enqueueBatch([{ type: 'diag.echo', queue: 'cl-trace' }]));
      await c.enqueue({ type: 'diag.echo', queue: 'cl-trace' });
      expect(proxy.seen.map((r) => r.headers.traceparent)).toEqual([`00-${traceId}-${spanId}-01`, `00-${traceId}-${spanId}-01`, undefined]);
      expect(proxy.seen.map((r) => r.headers.tracestate)).toEqual(['sluice=t1', 'sluice=t1', undefined]);
    });
  });
});

describe('SluiceClient with AUTH=on (e2e)', () => {
  const ROOT_KEY = 'sk_' + randomBytes(32).toString('base64url');
  let api: TestApi;

  beforeAll(async () => {
    api = await startTestApi('e2e-client-auth', { ROLE: 'api', AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT_KEY });
  });
  afterAll(() => api?.close());

  const keyFor = async (role: string) => {
    const r = await api.http.post('/keys').set('authorization', `Bearer ${ROOT_KEY}`).send({ name: `cl-${role}`, role });
    expect(r.status).toBe(201);
    return r.body.secret as string;
  };

  it('no key: UnauthorizedError; a producer key enqueues and reads but may not claim (ForbiddenError)', async () => {
    await expect(new SluiceClient({ baseUrl: api.url }).enqueue({ type: 'diag.echo' })).rejects.toBeInstanceOf(UnauthorizedError);
    const producer = new SluiceClient({ baseUrl: api.url, apiKey: await keyFor('producer') });
    const { job } = await producer.enqueue({ type: 'diag.echo', queue: 'cl-auth' });
    expect((await producer.get(job.id)).id).toBe(job.id);
    const err = await producer.claim('cl-auth', { workerId: 'w' }).catch((e) => e);
    expect(err).toBeInstanceOf(ForbiddenError);
    expect(err).toMatchObject({ status: 403, code: 'forbidden' });
  });

  it('a root key acts in the project it names (X-Sluice-Project)', async () => {
    const root = new SluiceClient({ baseUrl: api.url, apiKey: ROOT_KEY });
    const { job } = await root.enqueue({ type: 'diag.echo', queue: 'cl-auth' });
    expect((await root.get(job.id)).id).toBe(job.id);
    const elsewhere = new SluiceClient({ baseUrl: api.url, apiKey: ROOT_KEY, project: 'no-such-project' });
    await expect(elsewhere.get(job.id)).rejects.toBeInstanceOf(NotFoundError);
  });
});
