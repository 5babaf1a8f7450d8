import type { JobContext } from '../../core/handler';
import { UnrecoverableError } from '../../core/handler';
import type { Json } from '../../core/job';
import { JobHandler } from '../job-handler.decorator';
import { sleep } from '../../core/sleep';
import type { JobHandlerClass } from '../handler-class';

/**
 * EXAMPLE handler (simulated): validates `{to, subject, body?}` and pretends
 * to send an email. Replace with a real provider call. A malformed address is
 * unrecoverable (retrying cannot fix it); `to` ending in `@bounce.test`
 * simulates a transient provider error, so the demo shows retries.
 */
@JobHandler('send_email')
export class SendEmailHandler implements JobHandlerClass {
  async handle(p: Record<string, Json>, ctx: JobContext) {
    const to = p.to;
    if (typeof to !== 'string' || !/^[^@\s]+@[^@\s]+$/.test(to)) throw new UnrecoverableError('payload.to must be an email address');
    if (typeof p.subject !== 'string') throw new UnrecoverableError('payload.subject must be a string');
    ctx.log(`sending "${p.subject}" (${String(p.body ?? '').length} chars)`);
    await sleep(20 + Math.floor(Math.random() * 30), ctx.signal);
    if (to.endsWith('@bounce.test')) throw new Error(`smtp 451: temporary failure for ${to}`);
    return { messageId: `msg-${ctx.jobId}`, acceptedAt: new Date().toISOString() };
  }
}
