import { HIDDEN, hidePayloadsIn } from './hidden-payloads';

const SECRET = 'card-4242-4242';

describe('hidePayloadsIn', () => {
  test('a job: payload and result replaced, nothing else', () => {
    const job = { id: 'j1', queue: 'q', type: 't', status: 'completed', payload: { card: SECRET }, result: { ok: SECRET }, lastError: null, progress: 50 };
    expect(hidePayloadsIn(job)).toEqual({ ...job, payload: HIDDEN, result: HIDDEN });
    expect(job.payload.card).toBe(SECRET); // not changed in place
  });

  test('lists, pages and nested answers', () => {
    const page = { items: [{ id: 'a', status: 'waiting', payload: { s: SECRET }, result: null }], nextCursor: null };
    const out = JSON.stringify(hidePayloadsIn(page));
    expect(out).not.toContain(SECRET);
    expect(JSON.parse(out).items[0]).toMatchObject({ payload: HIDDEN, result: HIDDEN });
    expect(JSON.stringify(hidePayloadsIn({ jobs: [{ payload: { s: SECRET }, lockToken: 'x' }] }))).not.toContain(SECRET);
  });

  test('log lines: the message; events: data except progress and null', () => {
    const logs = { items: [{ at: 't', attempt: 1, level: 'info', message: `charging ${SECRET}` }] };
    expect(hidePayloadsIn(logs)).toEqual({ items: [{ at: 't', attempt: 1, level: 'info', message: HIDDEN }] });
    const events = {
      items: [
        { seq: 1, event: 'enqueued', data: { s: SECRET }, error: null },
        { seq: 2, event: 'progress', data: 40, error: null },
        { seq: 3, event: 'completed', data: { s: SECRET }, error: null },
        { seq: 4, event: 'claimed', data: null, error: null },
      ],
    };
    const out = hidePayloadsIn(events) as { items: { data: unknown }[] };
    expect(out.items.map((e) => e.data)).toEqual([HIDDEN, 40, HIDDEN, null]);
  });

  test('primitives and objects without such fields come back equal; a `message` that is no log line stays', () => {
    for (const v of [null, 1, 'x', true, [], {}]) expect(hidePayloadsIn(v)).toEqual(v);
    const err = { error: { code: 'not_found', message: 'job x not found', details: [] } };
    expect(hidePayloadsIn(err)).toEqual(err);
    const buf = Buffer.from('{"payload":1}');
    expect(hidePayloadsIn(buf)).toBe(buf);
  });
});
