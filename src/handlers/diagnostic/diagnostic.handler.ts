import { UnrecoverableError } from '../../core/handler';
import type { JobContext } from '../../core/handler';
import type { Json } from '../../core/job';
import { JobHandler } from '../job-handler.decorator';
import { sleep } from '../../core/sleep';
import type { JobHandlerClass } from '../handler-class';

/*
 * Diagnostic handlers (API.md), registered only when DIAGNOSTIC_HANDLERS=true.
 * They let tests and operators reproduce the failures a queue must survive.
 */

const ms = (p: Record<string, Json>, def: number): number => {
  const v = p.ms ?? def;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new UnrecoverableError('payload.ms must be a number ≥ 0');
  return v;
};

/** `diag.sleep {ms}`: waits, honoring the abort signal (heartbeats continue). */
@JobHandler('diag.sleep')
export class DiagSleepHandler implements JobHandlerClass {
  async handle(p: Record<string, Json>, ctx: JobContext) {
    await sleep(ms(p, 100), ctx.signal);
    return { sleptMs: ms(p, 100) };
  }
}

/**
 * `diag.block {ms, times?}`: busy loop that blocks the event loop, so no
 * heartbeats go out, on the first `times` attempts (default: every attempt);
 * later attempts return at once. Result: `{blockedMs}` (0 when it did not block).
 */
@JobHandler('diag.block')
export class DiagBlockHandler implements JobHandlerClass {
  handle(p: Record<string, Json>, ctx: JobContext) {
    const times = typeof p.times === 'number' ? p.times : Infinity;
    if (ctx.attempt > times) return { blockedMs: 0 };
    const until = Date.now() + ms(p, 1000);
    while (Date.now() < until) {
      /* spin: simulates CPU-bound work that starves the event loop */
    }
    return { blockedMs: ms(p, 1000) };
  }
}

/** `diag.fail {message, times?}`: fails the first `times` attempts (default: always). */
@JobHandler('diag.fail')
export class DiagFailHandler implements JobHandlerClass {
  handle(p: Record<string, Json>, ctx: JobContext) {
    const times = typeof p.times === 'number' ? p.times : Infinity;
    if (ctx.attempt <= times) throw new Error(typeof p.message === 'string' ? p.message : 'diag.fail');
    return { succeededOnAttempt: ctx.attempt };
  }
}

/** `diag.crash`: exits the worker process at once (no graceful shutdown, no ack). */
@JobHandler('diag.crash')
export class DiagCrashHandler implements JobHandlerClass {
  handle(): never {
    process.stderr.write('diag.crash: exiting the worker process\n');
    process.exit(1);
  }
}

/** `diag.echo`: the result is the payload. */
@JobHandler('diag.echo')
export class DiagEchoHandler implements JobHandlerClass {
  handle(p: Record<string, Json>) {
    return p;
  }
}

