/**
 * C6 (CASES.md): a poison job that kills its worker.
 *
 * Real processes: a scheduler (lease reaper every 200 ms) and a worker under a
 * supervisor (this test) that starts a new worker whenever the last one exits.
 * Lease 1 s. A `diag.crash` job (maxAttempts 3) is enqueued with 10
 * `diag.sleep {ms: 100}` jobs behind it. The crash job may run at most 3
 * times, then must sit in the dead-letter queue with a lastError saying its
 * lease expired; the 10 others must all complete within 10 s of the enqueue;
 * once dead-lettered the poison job crashes no worker any more.
 *
 * Run twice: a worker with one slot (the poison job at the head of the queue
 * must not block the jobs behind it for good), and a worker at the default
 * concurrency of 10, where the jobs claimed in the same batch as the poison
 * job die with the process each time it crashes.
 */
import { killAll, SluiceProcess } from '../../support/process';
import { openStore, sleep, TestStore } from '../../support/redis';
import {
  auditEvents,
  enqueue,
  expectOneTerminalEventPerJob,
  startOnPrefix,
  Supervisor,
  waitUntil,
} from '../../support/cases';

const LEASE_MS = 1000;
const REAPER_MS = 200;
const TIMINGS = {
  LOCK_TTL_MS: String(LEASE_MS),
  HEARTBEAT_INTERVAL_MS: '250',
  REAPER_INTERVAL_MS: String(REAPER_MS),
};
const TERMINAL = ['completed', 'failed', 'cancelled'];

let t: TestStore;
const procs: SluiceProcess[] = [];
const supervisors: Supervisor[] = [];

beforeAll(async () => {
  t = await openStore('c06');
});
afterAll(async () => {
  await Promise.all(supervisors.map((s) => s.stop()));
  await killAll(procs);
  await t.close();
});

async function poisonScenario(queue: string, concurrency: number): Promise<void> {
  const env = { ...TIMINGS, QUEUES: queue };
  procs.push(await startOnPrefix(t, { ...env, ROLE: 'scheduler' }));
  const supervisor = new Supervisor((waitReady) =>
    startOnPrefix(
      t,
      { ...env, ROLE: 'worker', WORKER_CONCURRENCY: String(concurrency) },
      { waitReady },
    ),
  );
  supervisors.push(supervisor);
  await supervisor.start();

  const enqueuedAt = Date.now();
  const ids = await enqueue(t, [
    { queue, type: 'diag.crash', maxAttempts: 3 },
    ...Array.from({ length: 10 }, (_, i) => ({
      queue,
      type: 'diag.sleep',
      payload: { ms: 100, i },
    })),
  ]);
  const [crashId, ...sleepIds] = ids;

  const getAll = () => Promise.all(ids.map((id) => t.store.getJob(queue, id)));
  await waitUntil(
    'every job to finish',
    async () =>
      (await getAll()).every((j) => j && TERMINAL.includes(j.status)) ? true : undefined,
    30_000,
    100,
  ).catch(
    () => undefined, // the assertions below say what is wrong
  );
  const jobs = await getAll();
  const ev = await auditEvents(t, queue);
  const trails = ids.map(
    (id, i) =>
      `${i === 0 ? 'crash' : `sleep${i - 1}`}: ${jobs[i]?.status} a=${jobs[i]?.attempts} [${ev
        .filter((e) => e.j === id)
        .map((e) => e.e)
        .join(',')}]`,
  );

  // The poison job: at most 3 runs, then the DLQ with a lease-expired error.
  const crash = jobs[0];
  expect({ status: crash?.status, attempts: crash?.attempts, trails }).toEqual({
    status: 'failed',
    attempts: 3,
    trails,
  });
  expect(crash!.lastError).toMatch(/lease expired/);
  expect(await t.redis.zscore(t.keys(queue).failed, crashId)).not.toBeNull();
  const crashRuns = ev.filter((e) => e.j === crashId && e.e === 'claimed').length;
  expect(crashRuns).toBeLessThanOrEqual(3);

  // The 10 jobs behind it all complete, within 10 s.
  expect({ statuses: jobs.slice(1).map((j) => j?.status), trails }).toEqual({
    statuses: Array(10).fill('completed'),
    trails,
  });
  const lastDone = Math.max(
    ...ev.filter((e) => sleepIds.includes(e.j) && e.e === 'completed').map((e) => e.at),
  );
  process.stdout.write(`C6 ${queue}: last of the 10 done ${lastDone - enqueuedAt} ms after the enqueue\n`);
  expect(lastDone - enqueuedAt).toBeLessThanOrEqual(10_000);

  // Each crash was a real process exit (code 1) caused by the poison job, one
  // per run, and once dead-lettered it crashes nobody any more.
  const crashes = supervisor.exits.length;
  await sleep(LEASE_MS + REAPER_MS + 1000);
  expect(supervisor.exits.length).toBe(crashes);
  expect(crashes).toBe(crashRuns);
  for (const x of supervisor.exits) {
    expect(x.code).toBe(1);
    expect(x.output).toContain('diag.crash: exiting the worker process');
  }

  expectOneTerminalEventPerJob(await auditEvents(t, queue), ids);
}

test('C6 poison job that kills its worker (1 slot) ends in the DLQ after at most 3 runs; the 10 jobs behind it complete', async () => {
  await poisonScenario('c6-one-slot', 1);
}, 60_000);

test('C6 poison job that kills its worker (default concurrency 10) does not take the jobs claimed with it to the DLQ', async () => {
  await poisonScenario('c6-ten-slots', 10);
}, 60_000);
