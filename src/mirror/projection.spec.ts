import { TRANSITIONS } from '../core/job-status';
import { entryFields, project } from './projection';

/**
 * entryFields reads the three entry formats the events stream has had, so a
 * writer of this version mirrors entries written before an upgrade: every
 * field on its own (before 2026-11-30), a five-part header (2026-11-30),
 * and the header of lua/includes/emit.lua (2026-12-01).
 */
describe('entryFields', () => {
  const id = '019ad6f1-2b3c-7d4e-8f90-123456789abc';
  const o = '3;600000;exponential|2000|3600000|equal';

  it('reads the same fields from every format', () => {
    const formats = {
      fields: ['e', 'completed', 'f', 'active', 't', 'completed', 'a', '2', 'at', '1796000000123', 'j', id, 'x', '2', 'w', 'w|1', 'd', '{"ok":1}', 'ms', '15'],
      header5: ['h', 'completed|active|completed|2|1796000000123', 'j', id, 'x', '2', 'w', 'w|1', 'd', '{"ok":1}', 'ms', '15'],
      header: ['h', `completed|active|completed|2|1796000000123|${id}|2|15`, 'w', 'w|1', 'd', '{"ok":1}'],
    };
    const want = { e: 'completed', f: 'active', t: 'completed', a: '2', at: '1796000000123', j: id, x: '2', w: 'w|1', d: '{"ok":1}', ms: '15' };
    for (const flat of Object.values(formats)) expect(entryFields(flat)).toEqual(want);
  });

  it('an enqueued header carries priority, runAt and the options, whose own "|" stay in them', () => {
    const h = `enqueued||delayed|0|1796000000123|${id}|||-10|1796000060000|${o}`;
    expect(entryFields(['h', h, 'ty', 'send', 'p', '{"a":"|"}'])).toEqual({
      e: 'enqueued', f: '', t: 'delayed', a: '0', at: '1796000000123', j: id, pr: '-10', ra: '1796000060000', o, ty: 'send', p: '{"a":"|"}',
    });
    const [row] = project([{ queue: 'q', id: '1796000000123-0', fields: entryFields(['h', h, 'ty', 'send', 'p', '{}']) }]).inserts;
    expect(row).toMatchObject({ id, priority: -10, runAt: 1796000060000, maxAttempts: 3, timeoutMs: 600000, backoff: 'exponential|2000|3600000|equal', status: 'delayed' });
  });

  it('empty and missing parts are absent fields, not empty strings', () => {
    expect(entryFields(['h', `claimed|waiting|active|1|5|${id}|1|`, 'w', 'w1'])).toEqual({ e: 'claimed', f: 'waiting', t: 'active', a: '1', at: '5', j: id, x: '1', w: 'w1' });
    expect(entryFields(['h', `retry_scheduled|active|delayed|1|5|${id}|1|||2000`])).toEqual({
      e: 'retry_scheduled', f: 'active', t: 'delayed', a: '1', at: '5', j: id, x: '1', ra: '2000',
    });
    expect(entryFields(['e', 'log', 'j', id, 'a', '1', 'at', '5', 'lvl', 'info', 'm', 'a|b'])).toEqual({ e: 'log', j: id, a: '1', at: '5', lvl: 'info', m: 'a|b' });
  });
});

describe('project: released', () => {
  const id = '019ad6f1-2b3c-7d4e-8f90-123456789abc';
  const entry = (h: string, rest: string[] = []) => ({ queue: 'q', id: '1796000000500-0', fields: entryFields(['h', h, ...rest]) });

  it('refunds the attempt and ends the execution released; back to waiting keeps runAt', () => {
    const b = project([entry(`released|active|waiting|2|1796000000500|${id}|2`, ['w', 'ext-1', 'r', 'worker'])]);
    expect(b.patches).toEqual([expect.objectContaining({ id, status: 'waiting', attempts: 1, workerId: 'ext-1' })]);
    expect(b.patches[0].runAt).toBeUndefined();
    expect(b.ends).toEqual([expect.objectContaining({ jobId: id, executionSeq: 2, outcome: 'released', attempt: 2 })]);
  });

  it('released with a delay: delayed, runAt from the event', () => {
    const b = project([entry(`released|active|delayed|1|1796000000500|${id}|1|||1796000060500`, ['w', 'ext-1', 'r', 'worker'])]);
    expect(b.patches).toEqual([expect.objectContaining({ id, status: 'delayed', attempts: 0, runAt: 1796000060500 })]);
    expect(b.ends).toEqual([expect.objectContaining({ outcome: 'released' })]);
  });
});

describe('project: debounced', () => {
  const id = '019ad6f1-2b3c-7d4e-8f90-123456789abc';
  const o = '4;9000;fixed|5|5|none';
  const entry = (ms: number, h: string, rest: string[]) => ({ queue: 'q', id: `${ms}-0`, fields: entryFields(['h', h, ...rest]) });

  it('sets the new spec (type, payload, priority, options, runAt) and status; the event row carries the payload', () => {
    const b = project([entry(1796000000500, `debounced|delayed|waiting|0|1796000000500|${id}|||-3|1796000000400|${o}`, ['ty', 'send.v2', 'p', '{"n":2}'])]);
    expect(b.patches).toEqual([
      { id, streamMs: '1796000000500', streamSeq: '0', updatedAt: 1796000000500, status: 'waiting', type: 'send.v2', payload: '{"n":2}', priority: -3, runAt: 1796000000400, maxAttempts: 4, timeoutMs: 9000, backoff: 'fixed|5|5|none', concurrencyKey: null },
    ]);
    expect(b.events[0]).toMatchObject({ event: 'debounced', from: 'delayed', to: 'waiting', data: '{"n":2}' });
    expect(b.finished).toEqual([]);
  });

  it('an enqueued job debounced in the same batch is one insert with the last spec', () => {
    const b = project([
      entry(1796000000100, `enqueued||delayed|0|1796000000100|${id}|||5|1796000060100|3;600000;exponential|2000|3600000|equal`, ['ty', 'send', 'p', '{"n":1}']),
      entry(1796000000200, `debounced|delayed|delayed|0|1796000000200|${id}|||0|1796000060200|${o}`, ['ty', 'send.v2', 'p', '{"n":2}']),
    ]);
    expect(b.patches).toEqual([]);
    expect(b.inserts).toEqual([
      expect.objectContaining({ id, type: 'send.v2', payload: '{"n":2}', priority: 0, runAt: 1796000060200, createdAt: 1796000000100, maxAttempts: 4, timeoutMs: 9000, backoff: 'fixed|5|5|none', status: 'delayed', updatedAt: 1796000000200 }),
    ]);
  });

  it("takes the update's concurrency key (ck), null when it sent none; folded into an insert of the same batch", () => {
    const keyed = project([entry(1796000000500, `debounced|delayed|delayed|0|1796000000500|${id}|||0|1796000060500|${o}`, ['ty', 't', 'p', '{}', 'ck', 'tenant-2'])]);
    expect(keyed.patches[0].concurrencyKey).toBe('tenant-2');
    const folded = project([
      entry(1796000000100, `enqueued||delayed|0|1796000000100|${id}|||0|1796000060100|${o}`, ['ty', 't', 'p', '{}', 'ck', 'tenant-1']),
      entry(1796000000200, `debounced|delayed|delayed|0|1796000000200|${id}|||0|1796000060200|${o}`, ['ty', 't', 'p', '{}']),
    ]);
    expect(folded.inserts[0].concurrencyKey).toBeNull();
  });
});

/**
 * Workflows (API.md v1.2, docs/workflows.md): a flow job is created
 * `blocked`, released (`unblocked`) to waiting or delayed, cancelled when a
 * dependency failed, and put back to `blocked` by a DLQ retry of that
 * dependency. The engine writes them with the header of lua/includes/emit.lua.
 */
describe('project: blocked and unblocked (workflows)', () => {
  const id = '019ad6f1-2b3c-7d4e-8f90-123456789abc';
  const o = '3;600000;exponential|2000|3600000|equal';
  const entry = (ms: number, h: string, rest: string[] = []) => ({ queue: 'q', id: `${ms}-0`, fields: entryFields(['h', h, ...rest]) });
  const enqueuedBlocked = entry(1796000000100, `enqueued||blocked|0|1796000000100|${id}|||0|1796000000100|${o}`, ['ty', 'report', 'p', '{"n":1}']);

  it('an enqueued event whose target is blocked inserts the job blocked', () => {
    const b = project([enqueuedBlocked]);
    expect(b.rejected).toEqual([]);
    expect(b.inserts).toEqual([expect.objectContaining({ id, status: 'blocked', type: 'report', runAt: 1796000000100, finishedAt: null })]);
    expect(b.events).toEqual([expect.objectContaining({ event: 'enqueued', from: null, to: 'blocked' })]);
    expect(b.finished).toEqual([]);
  });

  it('unblocked: blocked to waiting, runAt kept; to delayed with the runAt the event carries; no execution', () => {
    const w = project([entry(1796000000500, `unblocked|blocked|waiting|0|1796000000500|${id}||`)]);
    expect(w.rejected).toEqual([]);
    expect(w.patches).toEqual([{ id, streamMs: '1796000000500', streamSeq: '0', updatedAt: 1796000000500, status: 'waiting' }]);
    expect(w.events).toEqual([expect.objectContaining({ event: 'unblocked', from: 'blocked', to: 'waiting' })]);
    expect([w.ends, w.starts, w.dlq, w.finished]).toEqual([[], [], [], []]);
    const d = project([entry(1796000000500, `unblocked|blocked|delayed|0|1796000000500|${id}||||1796000060000`)]);
    expect(d.patches).toEqual([expect.objectContaining({ id, status: 'delayed', runAt: 1796000060000 })]);
  });

  it('enqueued blocked and unblocked in one batch: one insert, waiting', () => {
    const b = project([enqueuedBlocked, entry(1796000000500, `unblocked|blocked|waiting|0|1796000000500|${id}||`)]);
    expect(b.patches).toEqual([]);
    expect(b.inserts).toEqual([expect.objectContaining({ id, status: 'waiting', createdAt: 1796000000100, updatedAt: 1796000000500 })]);
    expect(b.events.map((e) => `${e.event}:${e.from}>${e.to}`)).toEqual(['enqueued:null>blocked', 'unblocked:blocked>waiting']);
  });

  it('blocked to cancelled, reason dependency_failed: finished (retention), no execution, not in the DLQ', () => {
    const b = project([entry(1796000000500, `cancelled|blocked|cancelled|0|1796000000500|${id}||`, ['r', 'dependency_failed'])]);
    expect(b.rejected).toEqual([]);
    expect(b.patches).toEqual([expect.objectContaining({ id, status: 'cancelled', finishedAt: 1796000000500 })]);
    expect(b.events).toEqual([expect.objectContaining({ event: 'cancelled', from: 'blocked', to: 'cancelled', reason: 'dependency_failed' })]);
    expect(b.finished).toEqual([{ queue: 'q', jobId: id, status: 'cancelled' }]);
    expect([b.ends, b.dlq]).toEqual([[], []]);
  });

  it('cancelled to blocked (a DLQ retry of the dependency): blocked, not finished any more', () => {
    const b = project([entry(1796000000900, `blocked|cancelled|blocked|0|1796000000900|${id}||`, ['r', 'dependency_retried'])]);
    expect(b.rejected).toEqual([]);
    expect(b.patches).toEqual([{ id, streamMs: '1796000000900', streamSeq: '0', updatedAt: 1796000000900, status: 'blocked', finishedAt: null }]);
    expect(b.events).toEqual([expect.objectContaining({ event: 'blocked', from: 'cancelled', to: 'blocked', reason: 'dependency_retried' })]);
    expect([b.finished, b.dlq, b.ends]).toEqual([[], [], []]);
    // Cancelled and brought back within one batch: the retention does not take it.
    const both = project([
      entry(1796000000500, `cancelled|blocked|cancelled|0|1796000000500|${id}||`, ['r', 'dependency_failed']),
      entry(1796000000900, `blocked|cancelled|blocked|0|1796000000900|${id}||`, ['r', 'dependency_retried']),
    ]);
    expect(both.patches).toEqual([expect.objectContaining({ status: 'blocked', finishedAt: null })]);
    expect(both.finished).toEqual([]);
  });

  it('every allowed transition is read, not quarantined, and sets the status it names (a cancel request none)', () => {
    for (const t of TRANSITIONS) {
      const b = project([entry(1796000000500, `${t.event}|${t.from ?? ''}|${t.to}|1|1796000000500|${id}|1|`, t.from === null ? ['ty', 't', 'p', '{}'] : [])]);
      const status = t.from === null ? b.inserts[0]?.status : b.patches[0]?.status;
      expect({ ...t, rejected: b.rejected.map((r) => r.reason), status }).toEqual({ ...t, rejected: [], status: t.event === 'cancel_requested' ? undefined : t.to });
    }
  });
});

/**
 * Which claimed and completed events an execution row holds (EventRow.folded,
 * migration 1796001900000): only those the view job_timeline gives back field
 * for field; any other stays a job_events row.
 */
describe('events held by the execution rows', () => {
  const id = '019ad6f1-2b3c-7d4e-8f90-123456789abc';
  const entry = (n: number, flat: string[]) => ({ queue: 'q', id: `1796000000${n}-0`, fields: entryFields(flat) });
  const claim = (w = 'w1', extra: string[] = []) => entry(100, ['h', `claimed|waiting|active|1|1796000000100|${id}|1|`, 'w', w, ...extra]);
  const done = (w = 'w1') => entry(110, ['h', `completed|active|completed|1|1796000000110|${id}|1|10`, 'w', w, 'd', '{"ok":1}']);
  const held = (b: ReturnType<typeof project>) => b.events.map((e) => [e.event, e.folded === true]);

  it('a claim and its completion by the claimant: both held by one whole row, with their ids and the result', () => {
    const b = project([claim(), done()]);
    expect(held(b)).toEqual([['claimed', true], ['completed', true]]);
    expect(b.starts).toEqual([]);
    expect(b.ends[0]).toMatchObject({ claimMs: '1796000000100', claimSeq: '0', endMs: '1796000000110', endSeq: '0', result: '{"ok":1}', startInBatch: true });
  });

  it('split over two batches: the start row holds the claim, the end row the completion', () => {
    expect(project([claim()]).starts[0]).toMatchObject({ claimMs: '1796000000100', claimSeq: '0' });
    expect(project([done()]).ends[0]).toMatchObject({ claimMs: null, endMs: '1796000000110', result: '{"ok":1}' });
  });

  it('a completion by another worker than the claimant: the whole row holds the completion, not the claim', () => {
    const b = project([claim('w1'), done('w2')]);
    expect(b.ends[0]).toMatchObject({ claimMs: null, endMs: '1796000000110', startInBatch: true });
    // Still one a row may hold (an earlier batch's start row did, if it came alone): the writer looks before writing it as a row.
    expect(held(b)).toEqual([['claimed', true], ['completed', true]]);
  });

  it('events the row cannot give back are rows: a claim with data or a reason, a completion without a worker, any other end', () => {
    expect(held(project([claim('w1', ['d', 'x'])]))).toEqual([['claimed', false]]);
    expect(held(project([claim('w1', ['r', 'why'])]))).toEqual([['claimed', false]]);
    expect(held(project([entry(110, ['h', `completed|active|completed|1|1796000000110|${id}|1|10`, 'd', '{}'])]))).toEqual([['completed', false]]);
    const failed = project([entry(110, ['h', `failed|active|failed|1|1796000000110|${id}|1|10`, 'w', 'w1', 'er', 'boom'])]);
    expect(held(failed)).toEqual([['failed', false]]);
    expect(failed.ends[0]).toMatchObject({ outcome: 'failed', endMs: null });
  });
});
