import { buildSummaryRequest, PAYLOAD_VALUE, readSummaryAnswer, REDACTED, SummaryInput, SUMMARY_SYSTEM_PROMPT } from './summary-request';

const PLANTED = 'PLANTED-customer-name-7f3a';
const SECRET = 'hunter2-SECRET-9c1d';
const payload = {
  customer: PLANTED,
  amount: 1234.5,
  card: { number: '4111111111111111', cvc: '123', apiKey: SECRET },
  headers: [{ Authorization: `Bearer ${SECRET}` }, { 'X-Trace': 'trace-value-0001' }],
  nested: { deeper: { deepest: { password: SECRET, note: 'plain-note-value' } } },
  'bob@example.com': 'value-under-an-email-key',
  sessionCookie: SECRET,
};
const input = (includePayload: boolean, error = 'charge failed: gateway said 502', over: Partial<SummaryInput> = {}): SummaryInput => ({
  sample: error, count: 12, hourly: new Array(24).fill(0).map((_, i) => (i === 23 ? 12 : 0)), types: ['charge'], queues: ['pay'], attempts: [3],
  firstAt: '2026-12-05T10:02:00.000Z', lastAt: '2026-12-05T10:40:00.000Z',
  jobs: Array.from({ length: 6 }, () => ({ queue: 'pay', payload: JSON.stringify(payload), error, includePayload })),
  ...over,
});
const sent = (i: SummaryInput) => JSON.stringify(buildSummaryRequest(i, 'llama3.1'));

describe('the summary request (what a model may see)', () => {
  it('carries the fixed prompt, the model, the error, counts, types, queues, attempts and the payload shape', () => {
    const body = buildSummaryRequest(input(false), 'llama3.1');
    expect(body.model).toBe('llama3.1');
    expect(body.stream).toBe(false);
    expect(body.messages[0]).toEqual({ role: 'system', content: SUMMARY_SYSTEM_PROMPT });
    const facts = JSON.parse(body.messages[1].content.slice(body.messages[1].content.indexOf('{')));
    expect(facts).toMatchObject({ normalizedError: 'charge failed: gateway said <n>', sampleErrors: ['charge failed: gateway said 502'], count: 12, types: ['charge'], queues: ['pay'], attempts: [3] });
    expect(facts.failuresPerHourLast24h[23]).toBe(12);
    expect(facts.payloadKeysAndTypes[0]).toMatchObject({ customer: 'string', amount: 'number', card: { number: 'string', apiKey: 'string' }, '<key>': 'string' });
    expect(facts.payloadSamples).toBeUndefined();
  });

  it('without the opt-in: no payload value at all, not even echoed in an error', () => {
    const text = sent(input(false, `cannot bill ${PLANTED} for 1234.5 with key ${SECRET}`));
    for (const v of [PLANTED, SECRET, '4111111111111111', 'trace-value-0001', 'plain-note-value', 'value-under-an-email-key', 'bob@example.com', '1234.5']) expect(text).not.toContain(v);
    expect(text).toContain(PAYLOAD_VALUE);
    expect(text).toContain('cannot bill');
  });

  it('with the opt-in: payload values, but never a value under a secret-looking key, at any depth', () => {
    const text = sent(input(true, `cannot bill ${PLANTED}, token ${SECRET}`));
    expect(text).toContain(PLANTED);
    expect(text).toContain('plain-note-value');
    expect(text).toContain(REDACTED);
    expect(text).not.toContain(SECRET);
    const facts = JSON.parse(buildSummaryRequest(input(true), 'm').messages[1].content.replace(/^[^{]*/, ''));
    expect(facts.payloadSamples).toHaveLength(3);
    const sample = JSON.parse(facts.payloadSamples[0]);
    expect(sample.card.apiKey).toBe(REDACTED);
    expect(sample.headers[0].Authorization).toBe(REDACTED);
    expect(sample.nested.deeper.deepest.password).toBe(REDACTED);
    expect(sample.sessionCookie).toBe(REDACTED);
  });

  it('opt-in is per job: jobs of a queue that did not opt in send no values', () => {
    const i = input(false);
    i.jobs = [{ queue: 'other', payload: JSON.stringify({ a: PLANTED }), error: 'x', includePayload: false }, { queue: 'pay', payload: JSON.stringify({ b: 'opted-in-value' }), error: 'x', includePayload: true }];
    const text = sent(i);
    expect(text).not.toContain(PLANTED);
    expect(text).toContain('opted-in-value');
  });

  it('at most 5 sample errors of at most 2 KiB each; results and logs are not inputs at all', () => {
    const i = input(false);
    i.jobs = Array.from({ length: 9 }, (_, n) => ({ queue: 'pay', payload: '{}', error: `e${n} ${'é'.repeat(3000)}`, includePayload: false }));
    const facts = JSON.parse(buildSummaryRequest(i, 'm').messages[1].content.replace(/^[^{]*/, ''));
    expect(facts.sampleErrors).toHaveLength(5);
    for (const e of facts.sampleErrors) expect(Buffer.byteLength(e, 'utf8')).toBeLessThanOrEqual(2048);
  });
});

describe('the model answer', () => {
  const body = (content: unknown) => ({ choices: [{ message: { role: 'assistant', content } }] });
  it('reads the JSON the prompt asks for, even inside prose or a code fence', () => {
    expect(readSummaryAnswer(body('```json\n{"diagnosis": "Worker w-3 lost its pool.", "nextStep": "Restart w-3."}\n```'))).toEqual({ text: 'Worker w-3 lost its pool.', nextStep: 'Restart w-3.' });
  });
  it('takes plain prose as the diagnosis; keeps markup as text; refuses no content', () => {
    expect(readSummaryAnswer(body('<img src=x onerror=alert(1)> it is the DB\u0007'))).toEqual({ text: '<img src=x onerror=alert(1)> it is the DB', nextStep: '' });
    expect(() => readSummaryAnswer(body(''))).toThrow();
    expect(() => readSummaryAnswer({ error: 'x' })).toThrow();
    expect(readSummaryAnswer(body('x'.repeat(5000))).text.length).toBeLessThanOrEqual(1500);
  });
});
