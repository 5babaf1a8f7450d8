/**
 * The flow record (lua/recordFlow-1.lua, lua/advanceFlow-1.lua; docs/workflows.md)
 * on real Redis: releases in dependency order, each outcome applied once (a
 * repeat answers the same and moves no counter), failure cascades by policy,
 * a DLQ retry takes an outcome back, a 999-child fan-in releases its parent
 * exactly once, at the last child.
 */
import type { FlowAdvance, FlowRecordJob } from '../../../src/core/ports/flows';
import { flowKeyBase } from '../../../src/redis/stores/flow-record';
import { openStore, TestStore } from '../../support/redis';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('flowrec');
});
afterAll(async () => {
  await t.close();
});

let n = 0;
const newFlow = () => `f${++n}-${Date.now()}`;
const job = (id: string, dependsOn: string[] = [], queue = 'q1', run = false): FlowRecordJob => ({ id, queue, dependsOn, onDependencyFailure: run ? 'run' : 'cancel' });
const ids = (a: FlowAdvance) => ({ release: a.release.map((x) => x.id).sort(), cancel: a.cancel.map((x) => x.id).sort(), reblock: a.reblock.map((x) => x.id).sort() });
const none = { release: [], cancel: [], reblock: [] };
const left = async (flow: string) => t.redis.hgetall(flowKeyBase(t.prefix, flow) + 'left');

describe('a diamond across two queues: a; b, c after a; d after b and c', () => {
  const diamond = [job('a', [], 'q1'), job('b', ['a'], 'q2'), job('c', ['a'], 'q1'), job('d', ['b', 'c'], 'q2')];

  it('releases in dependency order; each outcome moves the counters once and a repeat answers the same', async () => {
    const f = newFlow();
    const flows = t.stores.flows;
    expect(await flows.record(f, 'default', diamond)).toBe(true);
    expect(await flows.record(f, 'default', diamond)).toBe(false);
    expect(await left(f)).toEqual({ a: '0', b: '1', c: '1', d: '2' });
    const afterA = await flows.advance(f, 'a', 'completed');
    expect(afterA.release).toEqual([{ queue: 'q2', id: 'b' }, { queue: 'q1', id: 'c' }]);
    expect(ids(await flows.advance(f, 'a', 'completed'))).toEqual({ ...none, release: ['b', 'c'] });
    expect(await left(f)).toEqual({ a: '0', b: '0', c: '0', d: '2' });
    expect(ids(await flows.advance(f, 'b', 'completed'))).toEqual(none);
    expect(ids(await flows.advance(f, 'b', 'completed'))).toEqual(none);
    expect((await left(f)).d).toBe('1');
    expect(ids(await flows.advance(f, 'c', 'completed'))).toEqual({ ...none, release: ['d'] });
    expect(ids(await flows.advance(f, 'c', 'completed'))).toEqual({ ...none, release: ['d'] });
    expect((await left(f)).d).toBe('0');
    // Once d has an outcome it is never released again.
    expect(ids(await flows.advance(f, 'd', 'completed'))).toEqual(none);
    expect(ids(await flows.advance(f, 'c', 'completed'))).toEqual(none);
    expect(await t.redis.hmget(flowKeyBase(t.prefix, f) + 'meta', 'n', 'nc', 'nx', 'project')).toEqual(['4', '4', '0', 'default']);
  });

  it('a failure cancels the default dependents down the graph, a "run" dependent runs; a DLQ retry brings the cancelled back', async () => {
    const f = newFlow();
    const flows = t.stores.flows;
    await flows.record(f, 'default', [job('a'), job('b', ['a']), job('c', ['a'], 'q1', true), job('d', ['b', 'c'])]);
    // a fails: b (cancel) is cancelled, c (run) is released.
    expect(ids(await flows.advance(f, 'a', 'ended'))).toEqual({ ...none, release: ['c'], cancel: ['b'] });
    expect(ids(await flows.advance(f, 'a', 'ended'))).toEqual({ ...none, release: ['c'], cancel: ['b'] });
    // b's own cancellation cascades to d; c completes meanwhile.
    expect(ids(await flows.advance(f, 'b', 'ended'))).toEqual({ ...none, cancel: ['d'] });
    expect(ids(await flows.advance(f, 'c', 'completed'))).toEqual(none);
    expect(ids(await flows.advance(f, 'd', 'ended'))).toEqual(none);
    expect(await t.redis.hmget(flowKeyBase(t.prefix, f) + 'meta', 'nc', 'nx')).toEqual(['1', '3']);
    // Every job has an outcome: the record is kept 7 days (all of its parts).
    for (const part of ['meta', 'q', 'dnts', 'left', 'out']) {
      const ttl = await t.redis.pttl(flowKeyBase(t.prefix, f) + part);
      expect([part, ttl > 6 * 86_400_000 && ttl <= 7 * 86_400_000]).toEqual([part, true]);
    }
    // The DLQ retry of a: b is to be blocked again, then (b's retry) d.
    expect(ids(await flows.advance(f, 'a', 'retried'))).toEqual({ ...none, reblock: ['b'] });
    expect(await t.redis.pttl(flowKeyBase(t.prefix, f) + 'meta')).toBe(-1); // running again: kept
    expect(ids(await flows.advance(f, 'a', 'retried'))).toEqual({ ...none, reblock: ['b'] });
    expect(ids(await flows.advance(f, 'b', 'retried'))).toEqual({ ...none, reblock: ['d'] });
    expect(ids(await flows.advance(f, 'd', 'retried'))).toEqual(none);
    expect(await left(f)).toEqual({ a: '0', b: '1', c: '0', d: '1' });
    // a completes this time: b, then d (c completed already).
    expect(ids(await flows.advance(f, 'a', 'completed'))).toEqual({ ...none, release: ['b'] });
    expect(ids(await flows.advance(f, 'b', 'completed'))).toEqual({ ...none, release: ['d'] });
    expect(ids(await flows.advance(f, 'd', 'completed'))).toEqual(none);
    expect(await t.redis.hmget(flowKeyBase(t.prefix, f) + 'meta', 'nc', 'nx')).toEqual(['4', '0']);
  });
});

it('a "run" dependent waits for every dependency to end, failed or not; a retry of one takes its end back', async () => {
  const f = newFlow();
  const flows = t.stores.flows;
  await flows.record(f, 'default', [job('a'), job('b'), job('r', ['a', 'b'], 'q1', true)]);
  expect(ids(await flows.advance(f, 'a', 'ended'))).toEqual(none);
  expect(ids(await flows.advance(f, 'a', 'retried'))).toEqual(none);
  expect((await left(f)).r).toBe('2');
  expect(ids(await flows.advance(f, 'a', 'ended'))).toEqual(none);
  expect(ids(await flows.advance(f, 'b', 'completed'))).toEqual({ ...none, release: ['r'] });
});

it('a fan-in of 999 children releases its parent exactly once, at the last child, each child one counter step', async () => {
  const f = newFlow();
  const flows = t.stores.flows;
  const children = Array.from({ length: 999 }, (_, i) => job(`c${i}`));
  await flows.record(f, 'default', [...children, job('p', children.map((c) => c.id), 'q2')]);
  const released: string[] = [];
  for (const c of children) {
    const a = await flows.advance(f, c.id, 'completed');
    released.push(...a.release.map((x) => `${c.id}>${x.id}`));
    if (c.id !== 'c998') expect((await left(f)).p).toBe(String(998 - Number(c.id.slice(1))));
  }
  expect(released).toEqual(['c998>p']);
});

it('an unknown flow or job answers empty lists and writes nothing', async () => {
  const f = newFlow();
  expect(await t.stores.flows.advance(f, 'x', 'completed')).toEqual({ release: [], cancel: [], reblock: [] });
  expect(await t.redis.exists(flowKeyBase(t.prefix, f) + 'out')).toBe(0);
  await t.stores.flows.record(f, 'default', [job('a')]);
  expect(await t.stores.flows.advance(f, 'nope', 'completed')).toEqual({ release: [], cancel: [], reblock: [] });
  expect(await t.redis.exists(flowKeyBase(t.prefix, f) + 'out')).toBe(0);
});
