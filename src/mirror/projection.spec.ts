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
