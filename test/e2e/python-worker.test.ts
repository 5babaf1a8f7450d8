import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { startTestApi, TestApi } from '../support/http';
import { sleep } from '../support/redis';
import { waitUntil } from '../support/timing';

/**
 * examples/python/worker.py (standard-library Python) against a real server:
 * the external worker protocol end to end, spawned as `python3 worker.py
 * --handlers test/fixtures/python/handlers.py` with SLUICE_URL/SLUICE_API_KEY.
 */
const ROOT = resolve(__dirname, '../..');
const WORKER = join(ROOT, 'examples/python/worker.py');
const HANDLERS = join(ROOT, 'test/fixtures/python/handlers.py');
const HAS_PYTHON = spawnSync('python3', ['--version']).status === 0;
if (!HAS_PYTHON) process.stderr.write('python-worker.test.ts: python3 not found on PATH; skipping the Python worker tests\n');
const describePy = HAS_PYTHON ? describe : describe.skip;

interface PyWorker {
  proc: ChildProcess;
  output(): string;
  waitFor(re: RegExp, timeoutMs?: number): Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const started: PyWorker[] = [];

/** Spawns the worker on `queue` against `url`, with `key` as SLUICE_API_KEY (none when absent). */
function startWorker(url: string, queue: string, args: string[] = [], key?: string): PyWorker {
  const env: NodeJS.ProcessEnv = { ...process.env, SLUICE_URL: url, PYTHONUNBUFFERED: '1', PYTHONDONTWRITEBYTECODE: '1' };
  delete env.SLUICE_API_KEY;
  if (key) env.SLUICE_API_KEY = key;
  const proc = spawn('python3', [WORKER, '--queue', queue, '--handlers', HANDLERS, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => proc.on('exit', (code, signal) => r({ code, signal })));
  const w: PyWorker = {
    proc,
    output: () => out,
    exited,
    waitFor: async (re, timeoutMs = 15_000) => void (await waitUntil(`worker output ${re}`, async () => re.test(out), timeoutMs)),
  };
  started.push(w);
  return w;
}

afterEach(async () => {
  for (const w of started.splice(0)) {
    if (w.proc.exitCode === null && w.proc.signalCode === null) {
      w.proc.kill('SIGKILL');
      await w.exited;
    }
  }
});

describePy('examples/python/worker.py (e2e)', () => {
  let api: TestApi;

  beforeAll(async () => {
    api = await startTestApi('e2e-pyworker', { ROLE: 'api,audit,scheduler', REAPER_INTERVAL_MS: '100' });
  });
  afterAll(async () => {
    await api?.close();
  });

  const external = async (queue: string) => expect((await api.http.put(`/queues/${queue}`).send({ external: true })).status).toBe(200);
  const enqueue = async (queue: string, type: string, payload: unknown, extra: Record<string, unknown> = {}) => {
    const r = await api.http.post('/jobs').send({ queue, type, payload, ...extra });
    expect(r.status).toBe(201);
    return r.body.id as string;
  };
  const job = async (id: string) => (await api.http.get(`/jobs/${id}`)).body;
  const settled = (id: string, status: string, timeoutMs = 20_000) =>
    waitUntil(`job ${id} ${status}`, async () => {
      const j = await job(id);
      return j.status === status ? j : undefined;
    }, timeoutMs);
  /** Fails the test with the worker's output when `fn` throws. */
  const withOutput = async <T>(w: PyWorker, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (e) {
      process.stderr.write(`worker output:\n${w.output().slice(-4000)}\n`);
      throw e;
    }
  };

  it('claims and completes jobs with their results, on several threads', async () => {
    await external('py-ok');
    const ids = await Promise.all([1, 2, 3, 4].map((n) => enqueue('py-ok', 'py.ok', { n, s: 'é' })));
    const w = startWorker(api.url, 'py-ok', ['--concurrency', '3', '--worker-id', 'py-test-1']);
    await withOutput(w, async () => {
      for (const [i, id] of ids.entries()) {
        const j = await settled(id, 'completed');
        expect(j).toMatchObject({ result: { echo: { n: i + 1, s: 'é' } }, attempts: 1, workerId: 'py-test-1' });
      }
    });
  });

  it('a flow job reads its dependencies from its claim (job.dependencies)', async () => {
    await external('py-flow');
    const r = await api.http.post('/flows').send({
      jobs: [
        { ref: 'first', queue: 'py-flow', type: 'py.ok', payload: { n: 1 } },
        { ref: 'second', queue: 'py-flow', type: 'py.deps', payload: {}, dependsOn: ['first'] },
      ],
    });
    expect(r.status).toBe(201);
    const [first, second] = r.body.jobs.map((j: { id: string }) => j.id);
    const w = startWorker(api.url, 'py-flow', ['--concurrency', '2']);
    await withOutput(w, async () => {
      expect((await settled(second, 'completed')).result).toEqual({ dependencies: [{ ref: 'first', id: first, status: 'completed' }] });
    });
  });

  it('a retryable failure is retried with the job backoff, then dead-lettered after maxAttempts', async () => {
    await external('py-retry');
    const id = await enqueue('py-retry', 'py.fail', { message: 'flaky upstream' }, { maxAttempts: 3, backoff: { type: 'fixed', delayMs: 100, jitter: 'none' } });
    const w = startWorker(api.url, 'py-retry');
    const j = await withOutput(w, () => settled(id, 'failed'));
    expect(j).toMatchObject({ attempts: 3, maxAttempts: 3, lastError: 'flaky upstream' });
    const events = await waitUntil('events mirrored', async () => {
      const ev = (await api.http.get(`/jobs/${id}/events`)).body.items.map((e: { event: string }) => e.event);
      return ev.includes('failed') ? ev : undefined;
    });
    expect(events.filter((e: string) => e === 'retry_scheduled')).toHaveLength(2);
    const dlq = await waitUntil('in the DLQ', async () => {
      const items = (await api.http.get('/jobs/dlq/all?queue=py-retry')).body.items as { id: string }[];
      return items.length ? items : undefined;
    });
    expect(dlq.map((x) => x.id)).toEqual([id]);
  });

  it('PermanentError and an unknown type go to the DLQ at once (one attempt)', async () => {
    await external('py-fatal');
    const fatal = await enqueue('py-fatal', 'py.fatal', { message: 'card declined' }, { maxAttempts: 5 });
    const unknown = await enqueue('py-fatal', 'py.nobody', {}, { maxAttempts: 5 });
    const w = startWorker(api.url, 'py-fatal');
    await withOutput(w, async () => {
      expect(await settled(fatal, 'failed')).toMatchObject({ attempts: 1, lastError: 'card declined' });
      expect(await settled(unknown, 'failed')).toMatchObject({ attempts: 1, lastError: expect.stringContaining("no handler for job type 'py.nobody'") });
    });
    // The traceback is kept as an error log line of the attempt.
    const logs = await waitUntil('stack logged', async () => {
      const items = (await api.http.get(`/jobs/${fatal}/logs`)).body.items as { level: string; message: string }[];
      return items.length ? items : undefined;
    });
    expect(logs[0]).toMatchObject({ level: 'error', message: expect.stringContaining('PermanentError: card declined') });
  });

  it('heartbeats keep a job alive past its lease (1.5 s lease, 4 s job: one attempt, never stalled)', async () => {
    await external('py-long');
    const id = await enqueue('py-long', 'py.slow', { ms: 4000 }, { maxAttempts: 3 });
    const w = startWorker(api.url, 'py-long', ['--lease-ms', '1500']);
    const j = await withOutput(w, () => settled(id, 'completed', 30_000));
    expect(j).toMatchObject({ attempts: 1, result: { slept: 4000 }, progress: expect.any(Number) });
    const events = (await api.http.get(`/jobs/${id}/events`)).body.items.map((e: { event: string }) => e.event);
    expect(events).not.toContain('stalled');
    expect(events.filter((e: string) => e === 'claimed')).toHaveLength(1);
    const logs = await waitUntil('log line mirrored', async () => {
      const items = (await api.http.get(`/jobs/${id}/logs`)).body.items as { message: string }[];
      return items.length ? items : undefined;
    });
    expect(logs.map((l) => l.message)).toContain('slept 4000 ms');
  });

  it('a cancel while the job runs: the heartbeat sees it, the handler is told, the job ends cancelled', async () => {
    await external('py-cancel');
    const dir = mkdtempSync(join(tmpdir(), 'sluice-py-'));
    try {
      const marker = join(dir, 'marker');
      const id = await enqueue('py-cancel', 'py.wait-cancel', { marker });
      const w = startWorker(api.url, 'py-cancel', ['--lease-ms', '1500']);
      await withOutput(w, () => settled(id, 'active'));
      await sleep(300);
      const t0 = Date.now();
      expect((await api.http.delete(`/jobs/${id}`)).status).toBe(202);
      const j = await withOutput(w, () => settled(id, 'cancelled', 10_000));
      // Heartbeats every lease/3 = 500 ms.
      expect(Date.now() - t0).toBeLessThan(3000);
      expect(j.attempts).toBe(1);
      await waitUntil('handler saw the cancel', async () => existsSync(marker) && readFileSync(marker, 'utf8') === 'saw cancel');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('SIGTERM: no more claims, the running job finishes within the grace, exit 0', async () => {
    await external('py-term');
    const id = await enqueue('py-term', 'py.slow', { ms: 2500 });
    // Concurrency 2: a long poll (20 s) is in flight besides the job, and SIGTERM cuts it short.
    const w = startWorker(api.url, 'py-term', ['--grace-ms', '15000', '--concurrency', '2']);
    await withOutput(w, () => settled(id, 'active'));
    w.proc.kill('SIGTERM');
    await w.waitFor(/SIGTERM: no more claims/);
    const later = await enqueue('py-term', 'py.ok', { n: 1 });
    const t0 = Date.now();
    const { code } = await w.exited;
    expect(code).toBe(0);
    // It exits once the job is done, not after the long poll's 20 s.
    expect(Date.now() - t0).toBeLessThan(6000);
    expect(await job(id)).toMatchObject({ status: 'completed', attempts: 1, result: { slept: 2500 } });
    expect(await job(later)).toMatchObject({ status: 'waiting', attempts: 0 });
  });

  it('SIGTERM with a job longer than the grace: it is released (waiting, attempt not used), exit 0 at the end of the grace', async () => {
    await external('py-term2');
    // maxAttempts 1: had the attempt been used, the job would be dead-lettered.
    const id = await enqueue('py-term2', 'py.slow', { ms: 20_000 }, { maxAttempts: 1 });
    const w = startWorker(api.url, 'py-term2', ['--grace-ms', '500']);
    await withOutput(w, () => settled(id, 'active'));
    const t0 = Date.now();
    w.proc.kill('SIGTERM');
    const { code } = await w.exited;
    expect(code).toBe(0);
    expect(Date.now() - t0).toBeLessThan(4000);
    expect(await job(id)).toMatchObject({ status: 'waiting', attempts: 0, lastError: null });
    const events = await waitUntil('released mirrored', async () => {
      const ev: string[] = (await api.http.get(`/jobs/${id}/events`)).body.items.map((e: { event: string }) => e.event);
      return ev.includes('released') ? ev : undefined;
    });
    expect(events).toEqual(['enqueued', 'claimed', 'released']);
  });

  it('SIGTERM while the server is unreachable (between retries): exit 0 at once, not after the wait', async () => {
    // A port nothing listens on: every claim is refused, the worker waits between tries.
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const { port } = probe.address() as AddressInfo;
    await new Promise((r) => probe.close(r));
    const w = startWorker(`http://127.0.0.1:${port}`, 'py-down', ['--wait-ms', '0']);
    // A wait of at least 3 s has just begun (backoff with full jitter: it comes within a few tries).
    await w.waitFor(/retrying in ([3-9]|\d\d)\.\d s\n$/, 45_000);
    const t0 = Date.now();
    w.proc.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
    expect(Date.now() - t0).toBeLessThan(1500);
  }, 60_000);

  describe('429 / 503 from the server', () => {
    let proxy: Server;
    let proxyUrl: string;
    const refusedAt: number[] = [];
    let refuse = 0;

    beforeAll(async () => {
      // Refuses the next `refuse` claims (503, then 429, Retry-After: 1), forwards everything else.
      const upstream = new URL(api.url);
      proxy = createServer((req, res) => {
        if (req.url?.endsWith('/claim') && refuse > 0) {
          const status = refuse-- % 2 ? 503 : 429;
          refusedAt.push(Date.now());
          req.resume();
          res.writeHead(status, { 'content-type': 'application/json', 'retry-after': '1' });
          res.end(JSON.stringify({ error: { code: status === 503 ? 'unavailable' : 'rate_limited', message: 'try later' } }));
          return;
        }
        const fwd = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        });
        fwd.on('error', () => res.destroy());
        req.pipe(fwd);
      });
      await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
      proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      proxy.closeAllConnections();
      await new Promise((r) => proxy.close(r));
    });

    it('are retried no sooner than Retry-After asks, then the job is worked', async () => {
      await external('py-busy');
      const id = await enqueue('py-busy', 'py.ok', { n: 7 });
      refuse = 3;
      const w = startWorker(proxyUrl, 'py-busy');
      const j = await withOutput(w, () => settled(id, 'completed'));
      expect(j.result).toEqual({ echo: { n: 7 } });
      expect(refusedAt).toHaveLength(3);
      // Without Retry-After the first backoffs are 0..0.5 s and 0..1 s (full jitter).
      for (let i = 1; i < refusedAt.length; i++) expect(refusedAt[i] - refusedAt[i - 1]).toBeGreaterThanOrEqual(950);
      expect(w.output()).toMatch(/503 unavailable: try later; retrying in 1\.\d s/);
    });
  });
});

describePy('examples/python/worker.py with AUTH=on (e2e)', () => {
  const BOOTSTRAP = 'sk_' + randomBytes(32).toString('base64url');
  const admin = `Bearer ${BOOTSTRAP}`;
  let api: TestApi;

  beforeAll(async () => {
    api = await startTestApi('e2e-pyworker-auth', { ROLE: 'api,audit,scheduler', AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: BOOTSTRAP });
    expect((await api.http.put('/queues/py-auth').set('authorization', admin).send({ external: true })).status).toBe(200);
  });
  afterAll(async () => {
    await api?.close();
  });

  const key = async (role: string) => {
    const r = await api.http.post('/keys').set('authorization', admin).send({ name: `py-${role}`, role });
    expect(r.status).toBe(201);
    return r.body.secret as string;
  };
  const enqueue = async () => {
    const r = await api.http.post('/jobs').set('authorization', admin).send({ queue: 'py-auth', type: 'py.ok', payload: { k: 1 } });
    expect(r.status).toBe(201);
    return r.body.id as string;
  };
  const status = async (id: string) => (await api.http.get(`/jobs/${id}`).set('authorization', admin)).body.status;

  it('without a key: 401, the worker exits 2 naming SLUICE_API_KEY, the job stays waiting', async () => {
    const id = await enqueue();
    const w = startWorker(api.url, 'py-auth');
    const { code } = await w.exited;
    expect(code).toBe(2);
    expect(w.output()).toMatch(/401 unauthorized.*SLUICE_API_KEY/);
    expect(await status(id)).toBe('waiting');
  });

  it('with a producer key: 403, exit 2', async () => {
    const w = startWorker(api.url, 'py-auth', [], await key('producer'));
    const { code } = await w.exited;
    expect(code).toBe(2);
    expect(w.output()).toMatch(/403 forbidden/);
  });

  it('with a worker-role key: claims and completes, and the key never reaches the log', async () => {
    const secret = await key('worker');
    const id = await enqueue();
    const w = startWorker(api.url, 'py-auth', [], secret);
    await waitUntil('completed', async () => (await status(id)) === 'completed', 20_000);
    const j = (await api.http.get(`/jobs/${id}`).set('authorization', admin)).body;
    expect(j).toMatchObject({ status: 'completed', result: { echo: { k: 1 } } });
    w.proc.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
    expect(w.output()).not.toContain(secret);
  });
});
