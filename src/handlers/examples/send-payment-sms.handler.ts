import type { JobContext } from '../../core/handler';
import { UnrecoverableError } from '../../core/handler';
import type { Json } from '../../core/job';
import { JobHandler } from '../job-handler.decorator';
import { sleep } from '../../core/sleep';
import type { JobHandlerClass } from '../handler-class';

/**
 * EXAMPLE handler (simulated): texts a payment confirmation `{phone, amount,
 * currency}`. Uses the job id as the provider's idempotency key, since
 * delivery is at-least-once. An invalid number is an input error no retry
 * can fix, so it throws UnrecoverableError (dead-lettered at once): a
 * malformed one (not E.164), and one the gateway rejects because +999 is not
 * an assigned country code (the demo's dead-letter examples).
 * @throws UnrecoverableError on a bad phone or amount
 */
@JobHandler('SEND_PAYMENT_SMS')
export class SendPaymentSmsHandler implements JobHandlerClass {
  async handle(p: Record<string, Json>, ctx: JobContext) {
    if (typeof p.phone !== 'string' || !/^\+\d{6,15}$/.test(p.phone)) throw new UnrecoverableError('payload.phone must be E.164 (+ and 6-15 digits)');
    if (typeof p.amount !== 'number' || p.amount <= 0) throw new UnrecoverableError('payload.amount must be a positive number');
    await sleep(10 + Math.floor(Math.random() * 20), ctx.signal);
    if (p.phone.startsWith('+999')) throw new UnrecoverableError(`sms gateway rejected ${p.phone}: +999 is not an assigned country code`);
    ctx.log(`sent ${p.amount} ${String(p.currency ?? 'USD')} confirmation`);
    return { providerRef: `sms-${ctx.jobId}-${ctx.executionSeq}`, idempotencyKey: ctx.jobId };
  }
}
