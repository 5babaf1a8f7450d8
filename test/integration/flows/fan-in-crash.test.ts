/**
 * Workflows with real processes (node dist/main.js): 500 children in one
 * queue and their parent in another, two processes running the workers and
 * the flow worker (ROLE worker,scheduler), one SIGKILLed mid-run. Every child
 * completes (the killed worker's leases expire and are run again), and the
 * parent is released exactly once, after the last child: one `unblocked`
 * event, after every child's `completed`, and it runs once.
 */
import { killAll, SluiceProcess } from '../../support/process';
import { openStore, TestStore } from '../../support/redis';
import { auditEvents, startOnPrefix, waitUntil } from '../../support/cases';
import { submitFlow } from '../../support/flows';

let t: TestStore;
const procs: SluiceProcess[] = [];
beforeAll(async () => {
  t = await openStore('flowcrash');
});
afterAll(async () => {
  await killAll(procs);
  await t.close();
});

test('500 children across two worker processes, one SIGKILLed: the parent is released exactly once, after the last child', async () => {
  const [kids, top] = ['fan-kids', 'fan-top'];
  const children = Array.from({ length: 500 }, (_, i) => ({ ref: `c${i}`, queue: kids, type: 'diag.sleep', payload: { ms: 20 } }));
  const { id } = await submitFlow(t, [...children, { ref: 'parent', queue: top, deps: children.map((c) => c.ref), type: 'diag.echo', payload: { p: 1 } }]);
  const env = { ROLE: 'worker,scheduler', QUEUES: `${kids},${top}`, WORKER_CONCURRENCY: '8', LOCK_TTL_MS: '1500', HEARTBEAT_INTERVAL_MS: '300', REAPER_INTERVAL_MS: '200' };
  const [a, b] = await Promise.all([startOnPrefix(t, env), startOnPrefix(t, env)]);
  procs.push(a, b);
  await waitUntil('a third of the children to complete', async () => (await auditEvents(t, kids)).filter((e) => e.e === 'completed').length >= 170, 30_000, 50);
  a.kill('SIGKILL');
  await waitUntil('the parent to complete', async () => (await t.redis.hget(`${t.keys(top).base}job:${id.parent}`, 's')) === 'completed', 60_000, 50);

  const kidEvents = await auditEvents(t, kids);
  const completed = new Map<string, number>();
  for (const e of kidEvents) if (e.e === 'completed') completed.set(e.j, e.at);
  expect(completed.size).toBe(500);
  const lastChild = Math.max(...completed.values());
  const parentEvents = (await auditEvents(t, top)).filter((e) => e.j === id.parent);
  expect(parentEvents.map((e) => e.e)).toEqual(['enqueued', 'unblocked', 'claimed', 'completed']);
  expect(parentEvents[1].at).toBeGreaterThanOrEqual(lastChild);
}, 120_000);
