import { startTestApi, TestApi } from '../support/http';
import { waitUntil } from '../support/timing';
import { startTestServer, type TestServer } from '../integration/http-request/servers';

type J = { id: string; status: string; attempts: number; result: unknown; lastError: string | null };

/**
 * The built-in `http.request` job type through the real engine (API, worker,
 * Redis, audit): a webhook to a local server on an allowed host completes
 * with its result; a refused URL dead-letters at once (attempts 1); a 5xx is
 * retried. Only loopback servers started here are ever connected to.
 */
describe('http.request jobs (e2e)', () => {
  let api: TestApi;
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('hook');
    api = await startTestApi('e2e-http-request', { ROLE: 'api,worker,audit', DIAGNOSTIC_HANDLERS: 'false', HTTP_HANDLER_ALLOW_HOSTS: 'localhost' });
  });
  afterAll(async () => {
    await api?.close();
    await server?.close();
  });

  const enqueue = async (payload: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
    const res = await api.http.post('/jobs').send({ type: 'http.request', queue: 'hooks', payload, ...extra });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };
  const settled = async (id: string): Promise<J> => {
    let job: J | undefined;
    await waitUntil(`job ${id} settled`, async () => {
      job = (await api.http.get(`/jobs/${id}`)).body as J;
      return job.status === 'completed' || job.status === 'failed';
    }, 20000, 50);
    return job!;
  };

  it('is always registered (not a diagnostic handler)', async () => {
    expect(api.config.diagnosticHandlers).toBe(false);
    const id = await enqueue({ method: 'POST', url: `http://localhost:${server.port}/echo`, headers: { authorization: 'Bearer e2e' }, body: { event: 'paid' } });
    const job = await settled(id);
    expect(job.status).toBe('completed');
    expect(job.attempts).toBe(1);
    const result = job.result as { status: number; headers: Record<string, string>; body: string; truncated: boolean };
    expect(result).toMatchObject({ status: 200, truncated: false });
    expect(result.headers['content-type']).toBe('application/json');
    expect(JSON.parse(result.body)).toMatchObject({ method: 'POST', path: '/echo', authorization: 'Bearer e2e', body: '{"event":"paid"}' });
    // The job log names method, origin and status; never the header value.
    const logs = JSON.stringify((await api.http.get(`/jobs/${id}/logs`)).body);
    expect(logs).toContain(`POST http://localhost:${server.port}`);
    expect(logs).not.toContain('Bearer e2e');
  });

  it('a refused address fails at once: DLQ with attempts 1, nothing connected', async () => {
    const before = server.connections;
    const ids = [
      await enqueue({ method: 'GET', url: 'http://169.254.169.254/latest/meta-data/' }, { maxAttempts: 3 }),
      await enqueue({ method: 'GET', url: `http://127.0.0.1:${server.port}/echo` }, { maxAttempts: 3 }),
      await enqueue({ method: 'GET', url: `http://[::ffff:127.0.0.1]:${server.port}/echo` }, { maxAttempts: 3 }),
    ];
    // The message says the policy refused it, never which address class (nor the address).
    for (const [i, id] of ids.entries()) {
      const job = await settled(id);
      expect(job).toMatchObject({ status: 'failed', attempts: 1 });
      expect(job.lastError).toContain('refused by the address policy');
      expect(job.lastError).not.toMatch(/link-local|loopback|IPv4-mapped/);
      expect(i).toBeLessThan(3);
    }
    const dlq = (await api.http.get('/jobs/dlq/all').query({ queue: 'hooks', type: 'http.request', limit: 100 })).body.items.map((j: J) => j.id);
    expect(dlq).toEqual(expect.arrayContaining(ids));
    expect(server.connections).toBe(before);
  });

  it('a bad payload and a 4xx fail at once; a 5xx is retried until attempts run out', async () => {
    const bad = await settled(await enqueue({ method: 'GET', url: 'ftp://localhost/' }, { maxAttempts: 3 }));
    expect(bad).toMatchObject({ status: 'failed', attempts: 1, lastError: 'http.request: payload.url must use http or https' });
    const gone = await settled(await enqueue({ method: 'GET', url: `http://localhost:${server.port}/status/404` }, { maxAttempts: 3 }));
    expect(gone).toMatchObject({ status: 'failed', attempts: 1, lastError: `http.request: GET http://localhost:${server.port} answered 404` });
    const down = await settled(
      await enqueue({ method: 'GET', url: `http://localhost:${server.port}/status/503` }, { maxAttempts: 2, backoff: { type: 'fixed', delayMs: 10, jitter: 'none' } }),
    );
    expect(down).toMatchObject({ status: 'failed', attempts: 2, lastError: `http.request: GET http://localhost:${server.port} answered 503` });
  });
});
