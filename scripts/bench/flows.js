#!/usr/bin/env node
/*
 * Workflows (issue 21): a flow of 1 parent + N children (N=1,000 by default),
 * Sluice beside BullMQ's FlowProducer, on the same Redis, in this process,
 * alternating, several rounds; prints medians and p99s.
 *
 *   npm run build && node scripts/bench/flows.js            # N=1,000, 20 rounds
 *   ... --children 10000 --rounds 3                          # a wide fan-in
 *   ... --apart                                              # the flow worker in a process of its own
 *
 * Per round and system:
 * - submission: the time to create the whole flow (Sluice: the flow's record,
 *   the jobs created blocked, the children unblocked — what POST /flows does
 *   through the stores after validation, src/flows/submit-flow.ts; BullMQ:
 *   FlowProducer.add);
 * - release latency: from the last child's completion to the parent's start
 *   (Sluice: the `completed` and `claimed` events, Redis time; BullMQ: the
 *   children's finishedOn and the parent's processedOn), so both include the
 *   worker picking the parent up. Sluice's flow worker runs here as the
 *   scheduler role runs it (src/flows/flow-loop.ts: woken by the flow
 *   outbox over pub/sub, a sweep every second).
 * Workers: one per system at concurrency 50 for children and parent, no-op.
 * Needs `npm run build` (uses dist/) and Redis at REDIS_URL.
 */
const { performance } = require('node:perf_hooks');
const { randomUUID } = require('node:crypto');
const path = require('node:path');
const { fork } = require('node:child_process');
const IORedis = require('ioredis');
const { FlowProducer, Worker, Queue } = require('bullmq');
const systems = require('./systems');
const { redisQuiet, sleep, median, pct, fmt } = systems;

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const N = opt('children', 1000);
const ROUNDS = opt('rounds', 20);
const CONC = 50;
const dist = path.resolve(__dirname, '../../dist');
const { FlowWorkerLoop } = require(`${dist}/flows/flow-loop`);
const { submitFlow } = require(`${dist}/flows/submit-flow`);

/** --apart: the flow worker in a process of its own (scripts/bench/flow-worker-child.js), as ROLE=scheduler apart runs it. */
const APART = args.includes('--apart');

/** Forks the flow worker on `prefix`; resolves once it listens, with a stop() like FlowWorkerLoop's. */
function childFlowWorker(prefix) {
  const child = fork(path.join(__dirname, 'flow-worker-child.js'), [prefix]);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`flow worker child exited ${code}`)));
    child.once('message', () =>
      resolve({
        stop: () => new Promise((done) => {
          child.removeAllListeners('exit');
          child.once('exit', done);
          child.send('stop');
        }),
      }),
    );
  });
}

/** One Sluice round: returns {submitMs, releaseMs}. */
async function sluiceRound() {
  const s = systems.sluice({ concurrency: CONC, inflight: 1, tag: 'flows' });
  const { stores } = s;
  const [kids, top] = ['bench', 'bench-top'];
  const flowId = randomUUID();
  const ids = Array.from({ length: N }, () => randomUUID());
  const parent = randomUUID();
  const job = (queue, id, ref, deps) => ({
    ...systems.normalize({ ref }),
    queue,
    flow: { flowId, jobId: id, ref, onDependencyFailure: 'cancel', dependsOn: deps },
  });
  const t0 = performance.now();
  // The path POST /flows takes after validation (src/flows/submit-flow.ts).
  await submitFlow({ jobs: stores.jobs, flows: stores.flows }, flowId, 'default', [
    ...ids.map((id, i) => job(kids, id, `c${i}`, [])),
    job(top, parent, 'parent', ids.map((id, i) => ({ ref: `c${i}`, id, queue: kids }))),
  ]);
  const submitMs = performance.now() - t0;

  // The flow worker as the scheduler role runs it: woken by the outbox, a
  // sweep every second; in this process (ROLE=all), or --apart in its own.
  const flowWorker = APART ? await childFlowWorker(stores.ctx.prefix) : new FlowWorkerLoop(stores.flows, (e) => console.error('flow worker:', e.message));
  if (!APART) await flowWorker.start();
  // Children and parent: one runtime over both queues (the no-op handler runs
  // every type; the jobs here are type 'noop').
  const { rt, done } = await s.process(Infinity, undefined, { concurrency: CONC, queues: [kids, top] });
  const deadline = Date.now() + 120_000;
  while (done() < N + 1 && Date.now() < deadline) await sleep(5);
  await flowWorker.stop();
  await rt.stop();
  const at = async (queue, event, only) => {
    const entries = await s.redis.xrange(stores.ctx.keys(queue).events, '-', '+');
    const out = [];
    for (const [, f] of entries) {
      const h = f[f.indexOf('h') + 1].split('|');
      if (h[0] === event && (!only || h[5] === only)) out.push(Number(h[4]));
    }
    return out;
  };
  const lastChild = Math.max(...(await at(kids, 'completed')));
  const [parentStart] = await at(top, 'claimed', parent);
  if (process.env.FLOW_TRACE) console.log('trace: unblocked', (await at(top, 'unblocked'))[0] - lastChild, 'claimed', parentStart - lastChild);
  await s.clean();
  await s.close();
  if (!Number.isFinite(lastChild) || parentStart === undefined) throw new Error('Sluice: the flow did not finish');
  return { submitMs, releaseMs: parentStart - lastChild };
}

/** One BullMQ round: returns {submitMs, releaseMs}. */
async function bullRound() {
  const connection = new IORedis(systems.redisUrl(), { maxRetriesPerRequest: null });
  const tag = `bench-bullflow-${process.pid}-${randomUUID().slice(0, 8)}`;
  const [kids, top] = [`${tag}-kids`, `${tag}-top`];
  const producer = new FlowProducer({ connection });
  const t0 = performance.now();
  const tree = await producer.add({
    name: 'parent',
    queueName: top,
    data: {},
    children: Array.from({ length: N }, (_, i) => ({ name: 'noop', queueName: kids, data: { i } })),
  });
  const submitMs = performance.now() - t0;
  let parentDone;
  const finished = new Promise((r) => (parentDone = r));
  const mk = (q) => new Worker(q, async () => null, { connection: new IORedis(systems.redisUrl(), { maxRetriesPerRequest: null }), concurrency: CONC });
  const wk = mk(kids);
  const wp = mk(top);
  wp.on('completed', () => parentDone());
  await Promise.race([finished, sleep(120_000)]);
  const kq = new Queue(kids, { connection });
  const tq = new Queue(top, { connection });
  const parent = await tq.getJob(tree.job.id);
  const children = await kq.getJobs(['completed'], 0, -1);
  const lastChild = Math.max(...children.map((j) => j.finishedOn));
  await wk.close();
  await wp.close();
  await kq.obliterate({ force: true });
  await tq.obliterate({ force: true });
  await kq.close();
  await tq.close();
  await producer.close();
  connection.disconnect();
  if (children.length !== N || !parent?.processedOn) throw new Error('BullMQ: the flow did not finish');
  return { submitMs, releaseMs: parent.processedOn - lastChild };
}

async function main() {
  console.log(`flows: 1 parent + ${fmt(N)} children, ${ROUNDS} rounds, workers at concurrency ${CONC}, flow worker ${APART ? 'in a process of its own' : 'in the workers\' process'}, Redis ${systems.redisUrl()}`);
  const res = { Sluice: { submitMs: [], releaseMs: [] }, BullMQ: { submitMs: [], releaseMs: [] } };
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [name, fn] of round % 2 ? [['Sluice', sluiceRound], ['BullMQ', bullRound]] : [['BullMQ', bullRound], ['Sluice', sluiceRound]]) {
      await redisQuiet();
      const r = await fn();
      res[name].submitMs.push(r.submitMs);
      res[name].releaseMs.push(r.releaseMs);
      console.log(`round ${round} ${name.padEnd(6)} submission ${r.submitMs.toFixed(1)} ms, release ${r.releaseMs.toFixed(1)} ms`);
    }
  }
  console.log('\nmedians (p99) over the rounds:');
  for (const name of ['Sluice', 'BullMQ']) {
    const r = res[name];
    console.log(`  ${name.padEnd(6)} submission ${median(r.submitMs).toFixed(1)} ms (p99 ${pct(r.submitMs, 99).toFixed(1)}), release ${median(r.releaseMs).toFixed(1)} ms (p99 ${pct(r.releaseMs, 99).toFixed(1)})`);
  }
  console.log(`  Sluice / BullMQ: submission ${(median(res.Sluice.submitMs) / median(res.BullMQ.submitMs)).toFixed(2)}x the time, release ${(median(res.Sluice.releaseMs) / median(res.BullMQ.releaseMs)).toFixed(2)}x`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
