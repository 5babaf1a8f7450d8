import type { JobContext } from '../../core/handler';
import { UnrecoverableError } from '../../core/handler';
import { SendPaymentSmsHandler } from './send-payment-sms.handler';

const ctx = (): JobContext & { lines: string[] } => {
  const lines: string[] = [];
  return {
    jobId: 'job-1', queue: 'critical', type: 'SEND_PAYMENT_SMS', attempt: 1, maxAttempts: 3, executionSeq: 1, dependencies: [],
    signal: new AbortController().signal, progress: async () => undefined, log: (m: string) => void lines.push(m), lines,
  };
};

describe('SEND_PAYMENT_SMS (example handler)', () => {
  const h = new SendPaymentSmsHandler();

  test('a valid number is sent once per job (the job id is the idempotency key)', async () => {
    const c = ctx();
    await expect(h.handle({ phone: '+15550001234', amount: 42, currency: 'EUR' }, c)).resolves.toEqual({ providerRef: 'sms-job-1-1', idempotencyKey: 'job-1' });
    expect(c.lines).toEqual(['sent 42 EUR confirmation']);
  });

  // An invalid number is an input error no retry can fix: dead-lettered at once (README "Quick start").
  test.each([['+9990001003', /not an assigned country code/], ['0555 1234', /E\.164/], [42, /E\.164/]])('an invalid number (%p) is unrecoverable', async (phone, msg) => {
    const e = await h.handle({ phone, amount: 10 }, ctx()).then(() => null, (err: unknown) => err);
    expect(e).toBeInstanceOf(UnrecoverableError);
    expect((e as Error).message).toMatch(msg);
  });

  test('a bad amount is unrecoverable', async () => {
    await expect(h.handle({ phone: '+15550001234', amount: 0 }, ctx())).rejects.toBeInstanceOf(UnrecoverableError);
  });
});
