import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import {
  ExternalWorker,
  JobCancelledError,
  LeaseLostError,
  SluiceClient,
  UnrecoverableError,
  ValidationFailedError,
  type ExternalWorkerOptions,
  type Job,
} from '../../clients/typescript/src';
import { startTestApi, type TestApi } from '../support/http';
import { sleep } from '../support/redis';
import { waitUntil } from '../support/timing';

/**
 * ExternalWorker (@sluice/client) against a real server: in this process for
 * the handler-facing behaviour, and as a child process (the built client,
 * test/fixtures/client/worker.js) for SIGKILL mid-job and SIGTERM.
 */
const ROOT = resolve(__dirname, '../..');
const PKG = join(ROOT, 'clients/typescript');
const FIXTURE = join(ROOT, 'test/fixtures/client/worker.js');

let api: TestApi;
let client: SluiceClient;
const workers: ExternalWorker[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  // The child workers run the compiled client, as a service in another repository would.
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(PKG, 'tsconfig.json')], { stdio: 'inherit' });
  api = await startTestApi('e2e-client-worker', { ROLE: 'api,audit,scheduler', REAPER_INTERVAL_MS: '100' });
  client = new SluiceClient({ baseUrl: api.url });
}, 120_000);
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop({ graceMs: 0 })));
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill('SIGKILL');
      await new Promise((r) => c.once('exit', r));
    }
  }
});
afterAll(() => api?.close());

const quiet = () => {};
function worker(opts: Omit<ExternalWorkerOptions, 'client'> & { client?: SluiceClient }): ExternalWorker {
  const w = new ExternalWorker({ client, waitMs: 1000, log: quiet, ...opts });
  workers.push(w);
  void w.start();
  return w;
}
const external = (queue: string) => client.queues.configure(queue, { external: true });
const enqueue = async (queue: string, type: string, payload: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => (await client.enqueue({ queue, type, payload, ...extra })).job.id;
const settled = (id: string, status: Job['status'], timeoutMs = 20_000) =>
  waitUntil(`job ${id} ${status}`, async () => {
    const j = await client.get(id);
    return j.status === status ? j : undefined;
  }, timeoutMs);
const eventsOf = async (id: string, last: string) =>
  waitUntil(`events of ${id} up to ${last}`, async () => {
    const ev: string[] = (await client.events(id)).map((e) => e.event);
    return ev.includes(last) ? ev : undefined;
  });

describe('ExternalWorker in process (e2e)', () => {
  it('runs jobs with their results, at most `concurrency` at once', async () => {
    await external('cw-ok');
    const ids = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => enqueue('cw-ok', 'double', { n })));
    let now = 0;
    let peak = 0;
    worker({
      queue: 'cw-ok',
      concurrency: 3,
      handlers: {
        double: async (job) => {
          peak = Math.max(peak, ++now);
          await sleep(300);
          now--;
          return { doubled: (job.payload.n as number) * 2 };
        },
      },
    });
    for (const [i, id] of ids.entries()) expect(await settled(id, 'completed')).toMatchObject({ attempts: 1, result: { doubled: (i + 1) * 2 } });
    expect(peak).toBe(3);
  });

  it('heartbeats keep a job alive past its lease (600 ms lease, 2 s job), carrying progress and log lines', async () => {
    await external('cw-long');
    const id = await enqueue('cw-long', 'slow', {}, { maxAttempts: 3 });
    worker({
      queue: 'cw-long',
      leaseMs: 600,
      handlers: {
        slow: async (_job, ctx) => {
          ctx.progress(50);
          ctx.log('halfway');
          await sleep(2000);
          ctx.log('done');
          return 'ok';
        },
      },
    });
    expect(await settled(id, 'completed')).toMatchObject({ attempts: 1, result: 'ok', progress: 50 });
    const events = await eventsOf(id, 'completed');
    expect(events).not.toContain('stalled');
    expect(events.filter((e) => e === 'claimed')).toHaveLength(1);
    const logs = await waitUntil('log lines', async () => {
      const lines = (await client.logs(id)).map((l) => l.message);
      return lines.includes('done') ? lines : undefined;
    });
    expect(logs).toEqual(['halfway', 'done']);
  });

  it('a throw fails the attempt retryable; UnrecoverableError and an unknown type go to the DLQ at once', async () => {
    await external('cw-fail');
    const backoff = { type: 'fixed', delayMs: 50, jitter: 'none' };
    const flaky = await enqueue('cw-fail', 'flaky', {}, { maxAttempts: 2, backoff });
    const fatal = await enqueue('cw-fail', 'fatal', {}, { maxAttempts: 5 });
    const unknown = await enqueue('cw-fail', 'nobody', {}, { maxAttempts: 5 });
    worker({
      queue: 'cw-fail',
      handlers: {
        flaky: () => Promise.reject(new Error('upstream 502')),
        fatal: () => {
          throw new UnrecoverableError('card declined');
        },
      },
    });
    expect(await settled(flaky, 'failed')).toMatchObject({ attempts: 2, lastError: 'upstream 502' });
    expect(await settled(fatal, 'failed')).toMatchObject({ attempts: 1, lastError: 'card declined' });
    expect(await settled(unknown, 'failed')).toMatchObject({ attempts: 1, lastError: "no handler for job type 'nobody' in this worker" });
  });

  it('a cancel aborts ctx.signal (JobCancelledError) and the job ends cancelled', async () => {
    await external('cw-cancel');
    const id = await enqueue('cw-cancel', 'wait');
    let reason: unknown;
    worker({
      queue: 'cw-cancel',
      leaseMs: 900,
      handlers: {
        wait: (_job, ctx) =>
          new Promise((_, reject) =>
            ctx.signal.addEventListener('abort', () => {
              reason = ctx.signal.reason;
              reject(ctx.signal.reason);
            }),
          ),
      },
    });
    await settled(id, 'active');
    const t0 = Date.now();
    expect((await client.cancel(id)).cancelRequested).toBe(true);
    expect(await settled(id, 'cancelled')).toMatchObject({ attempts: 1 });
    // Heartbeats every 300 ms.
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(reason).toBeInstanceOf(JobCancelledError);
  });

  it('a lost lease aborts ctx.signal (LeaseLostError) and the late result is never sent', async () => {
    await external('cw-lost');
    const id = await enqueue('cw-lost', 'stuck', {}, { maxAttempts: 3, backoff: { type: 'fixed', delayMs: 0, jitter: 'none' } });
    // Heartbeats fail (network) until `cut` is lifted: the 600 ms lease expires meanwhile.
    let cut = true;
    const completes: string[] = [];
    const lossy = new SluiceClient({
      baseUrl: api.url,
      retries: false,
      fetch: async (input, init) => {
        const url = String(input);
        if (cut && url.endsWith('/heartbeat')) throw new TypeError('fetch failed');
        if (url.endsWith('/complete')) completes.push(String(init?.body && Buffer.from(init.body as ArrayBuffer).toString()));
        return fetch(input, init);
      },
    });
    let reason: unknown;
    worker({
      client: lossy,
      queue: 'cw-lost',
      leaseMs: 600,
      handlers: {
        stuck: async (job, ctx) => {
          if (job.attempts > 1) return 'second';
          await new Promise((r) => ctx.signal.addEventListener('abort', r));
          reason = ctx.signal.reason;
          return 'too late';
        },
      },
    });
    await settled(id, 'active');
    await eventsOf(id, 'stalled');
    cut = false;
    // The next heartbeat answers 409 lease_lost; the job is claimed again (attempt 2) once the slot is free.
    expect(await settled(id, 'completed')).toMatchObject({ attempts: 2, result: 'second' });
    expect(reason).toBeInstanceOf(LeaseLostError);
    expect(completes).toHaveLength(1);
    expect(completes[0]).toContain('"second"');
  });
});

describe('ExternalWorker refused for good', () => {
  it('a claim the server refuses for good (here 400, a bad queue name; also 401/403/404) rejects start()', async () => {
    const w = new ExternalWorker({ client, queue: 'Not A Queue', handlers: {}, log: quiet });
    workers.push(w);
    const err = await Promise.race([w.start().catch((e) => e), sleep(3000).then(() => 'still claiming')]);
    expect(err).toBeInstanceOf(ValidationFailedError);
    expect(w.active).toBe(0);
  });
});

describe('ExternalWorker as a child process (e2e)', () => {
  interface Child {
    proc: ChildProcess;
    out(): string;
    exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  }
  function spawnWorker(queue: string, env: Record<string, string> = {}): Child {
    const proc = spawn(process.execPath, [FIXTURE], { env: { ...process.env, SLUICE_CLIENT: PKG, SLUICE_URL: api.url, QUEUE: queue, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(proc);
    let out = '';
    proc.stdout!.on('data', (d) => (out += d));
    proc.stderr!.on('data', (d) => (out += d));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => proc.on('exit', (code, signal) => r({ code, signal })));
    return { proc, out: () => out, exited };
  }
  const started = (c: Child, id: string) => waitUntil(`started ${id}`, async () => c.out().includes(`started ${id}`) || undefined, 15_000);

  it('killed mid-job (SIGKILL): the job is delivered again after its lease and completes on a second worker, attempts 2', async () => {
    await external('cw-kill');
    const id = await enqueue('cw-kill', 'sleep', { ms: 800 }, { maxAttempts: 3, backoff: { type: 'fixed', delayMs: 0, jitter: 'none' } });
    const first = spawnWorker('cw-kill', { LEASE_MS: '1000' });
    await started(first, id);
    first.proc.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    const second = spawnWorker('cw-kill', { LEASE_MS: '1000' });
    const j = await settled(id, 'completed');
    expect(j).toMatchObject({ attempts: 2, result: { slept: 800, worker: second.proc.pid } });
    const events = await eventsOf(id, 'completed');
    expect(events).toContain('stalled');
    expect(events.filter((e) => e === 'claimed')).toHaveLength(2);
  });

  it('SIGTERM: no more claims, the running job finishes within the grace, exit 0', async () => {
    await external('cw-term');
    const id = await enqueue('cw-term', 'sleep', { ms: 1500 });
    // Concurrency 2: a long poll is in flight besides the job, and SIGTERM ends it.
    const w = spawnWorker('cw-term', { GRACE_MS: '15000', CONCURRENCY: '2' });
    await started(w, id);
    const t0 = Date.now();
    w.proc.kill('SIGTERM');
    await waitUntil('stopping', async () => /stopping: no more claims/.test(w.out()) || undefined);
    const later = await enqueue('cw-term', 'sleep', { ms: 1 });
    const { code } = await w.exited;
    expect(code).toBe(0);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(w.out()).toContain('stopped');
    expect(await client.get(id)).toMatchObject({ status: 'completed', attempts: 1, result: { slept: 1500 } });
    expect(await client.get(later)).toMatchObject({ status: 'waiting', attempts: 0 });
  });

  it('SIGTERM with a job longer than the grace: it is aborted and released (waiting, attempt not used), exit 0 at the end of the grace', async () => {
    await external('cw-term2');
    // maxAttempts 1: had the attempt been used, the job would be dead-lettered.
    const id = await enqueue('cw-term2', 'sleep', { ms: 20_000 }, { maxAttempts: 1 });
    const w = spawnWorker('cw-term2', { GRACE_MS: '500' });
    await started(w, id);
    const t0 = Date.now();
    w.proc.kill('SIGTERM');
    expect((await w.exited).code).toBe(0);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(await client.get(id)).toMatchObject({ status: 'waiting', attempts: 0, lastError: null });
    expect(await eventsOf(id, 'released')).toEqual(['enqueued', 'claimed', 'released']);
    expect(w.out()).toMatch(/release -> waiting/);
  });
});
