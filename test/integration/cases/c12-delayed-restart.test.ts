import { normalizeEnqueue } from '../../../src/core/job-options';
import { killAll, SluiceProcess, startSluice } from '../../support/process';
import { openStore, sleep, TestStore } from '../../support/redis';
import { cpuTimeMs, events, PrivateRedis, privateRedis, StreamEvent, waitBlocked, waitUntil, workerIdOf } from '../../support/timing';

/**
 * C12 — Delayed jobs fire with no other traffic, and after a restart
 * (CASES.md). A `delayMs: 10000` job must start 10 s ± 1 s after it was
 * enqueued (both instants from the events stream, Redis clock), with only an
 * idle worker process running (ROLE=worker: no promoter), also when the
 * worker process or an AOF-backed Redis is restarted at 3 s. Wake-ups must
 * come from the delayed set, never from an in-memory timer alone.
 */
const DELAY_MS = 10_000;
const TOLERANCE_MS = 1_000;
/** An idle worker may poll, but must not spin: at most this share of one core. */
const IDLE_CPU_SHARE = 0.2;

const procs: (SluiceProcess | undefined)[] = [];
let t: TestStore | undefined;
let redis: PrivateRedis | undefined;

afterEach(async () => {
  await killAll(procs.splice(0));
  await t?.close();
  t = undefined;
});
afterAll(async () => {
  await redis?.destroy();
});

async function start(queue: string, env: Record<string, string> = {}): Promise<{ p: SluiceProcess; workerId: string }> {
  const p = await startSluice({ REDIS_PREFIX: t!.prefix, QUEUES: queue, ROLE: 'worker', ...env });
  procs.push(p);
  return { p, workerId: await workerIdOf(p) };
}

async function enqueueDelayed(queue: string): Promise<string> {
  const [r] = await t!.store.enqueue([normalizeEnqueue({ queue, type: 'diag.echo', payload: { q: queue }, delayMs: DELAY_MS }, 524288)]);
  expect(r.status).toBe('delayed');
  return r.id;
}

/** Waits for the job to complete; returns its events and ms from enqueue to start. */
async function startedAfter(queue: string, id: string): Promise<{ ev: StreamEvent[]; ms: number }> {
  await waitUntil(`job ${id} completed`, async () => (await t!.store.getJob(queue, id))?.status === 'completed', DELAY_MS + 8000, 50);
  const ev = await events(t!.redis, t!.keys(queue).events, id);
  const enq = ev.find((e) => e.e === 'enqueued') as StreamEvent;
  const claimed = ev.filter((e) => e.e === 'claimed');
  expect(claimed).toHaveLength(1);
  return { ev, ms: claimed[0].at - enq.at };
}

function expectOnTime(ms: number): void {
  expect({ startedAfterMs: ms, onTime: Math.abs(ms - DELAY_MS) <= TOLERANCE_MS }).toEqual({ startedAfterMs: ms, onTime: true });
}

test('C12: a 10 s delayed job runs at 10 s ± 1 s with nothing else happening (idle worker)', async () => {
  t = await openStore('c12a');
  // QUEUES=* (the default): the worker starts before its queue exists.
  const { p, workerId } = await start('*');
  const idleFrom = { cpu: cpuTimeMs(p.proc.pid!), at: Date.now() };
  await sleep(2000);
  const idleCpu = (cpuTimeMs(p.proc.pid!) - idleFrom.cpu) / (Date.now() - idleFrom.at);
  expect({ idleCpuShare: idleCpu, low: idleCpu < IDLE_CPU_SHARE }).toEqual({ idleCpuShare: idleCpu, low: true });

  const id = await enqueueDelayed('c12a');
  const waitFrom = { cpu: cpuTimeMs(p.proc.pid!), at: Date.now() };
  const { ms, ev } = await startedAfter('c12a', id);
  expectOnTime(ms);
  expect(ev.map((e) => e.e)).toEqual(['enqueued', 'promoted', 'claimed', 'completed']);
  expect(ev[2].w).toBe(workerId);
  const waitCpu = (cpuTimeMs(p.proc.pid!) - waitFrom.cpu) / (Date.now() - waitFrom.at);
  expect({ waitCpuShare: waitCpu, low: waitCpu < IDLE_CPU_SHARE }).toEqual({ waitCpuShare: waitCpu, low: true });
}, 30000);

test('C12: restarting the worker process at 3 s (SIGTERM, new process) still runs it at 10 s ± 1 s', async () => {
  t = await openStore('c12b');
  const first = await start('c12b');
  await waitBlocked(t.redis, first.workerId);
  const enqueuedAt = Date.now();
  const id = await enqueueDelayed('c12b');
  await sleep(3000 - (Date.now() - enqueuedAt));
  first.p.kill('SIGTERM');
  expect(await first.p.exited).toEqual({ code: 0, signal: null });
  const second = await start('c12b');
  const { ms, ev } = await startedAfter('c12b', id);
  expectOnTime(ms);
  expect(ev.find((e) => e.e === 'claimed')?.w).toBe(second.workerId);
}, 40000);

test('C12: restarting an AOF-backed Redis at 3 s still runs it at 10 s ± 1 s', async () => {
  redis = await privateRedis();
  await redis.start();
  t = await openStore('c12c', redis.url);
  const { workerId } = await start('c12c', { REDIS_URL: redis.url });
  await waitBlocked(t.redis, workerId);
  const enqueuedAt = Date.now();
  const id = await enqueueDelayed('c12c');
  await sleep(3000 - (Date.now() - enqueuedAt));
  await redis.kill('SIGKILL');
  await redis.start();
  // The job survived the crash: still delayed, same runAt.
  const job = await t.store.getJob('c12c', id);
  expect(job).toMatchObject({ status: 'delayed' });
  expect(job!.runAt - job!.createdAt).toBe(DELAY_MS);
  const { ms, ev } = await startedAfter('c12c', id);
  expectOnTime(ms);
  expect(ev.find((e) => e.e === 'claimed')?.w).toBe(workerId);
}, 40000);
