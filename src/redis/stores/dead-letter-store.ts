import { encodeBackoff } from '../../core/backoff';
import { errorFromCode, ScriptErrorCode } from '../../core/errors';
import type { Job, Json } from '../../core/job';
import type { JobStatus } from '../../core/job-status';
import { DeadLetterStore, type ReviveJobInput } from '../../core/ports/dead-letters';
import type { RedisContext } from '../context';
import { flowField } from './restore-store';

/** The Redis implementation of {@link DeadLetterStore}: lua/retryJob-5.lua, reviveJob-4.lua, purgeDlq-2.lua. */
export class RedisDeadLetterStore implements DeadLetterStore {
  constructor(private readonly ctx: RedisContext) {}

  async retry(queue: string, id: string, payload?: Record<string, Json>): Promise<JobStatus> {
    const k = this.ctx.keys(queue);
    const [code, status] = await this.ctx.scripts.run<[number, string]>(
      'retryJob',
      [k.failed, k.waiting, k.events, k.wake, k.meta],
      [k.base, id, payload === undefined ? '' : JSON.stringify(payload)],
    );
    if (code < 0) throw errorFromCode(code, id, status, 'retry');
    return status as JobStatus;
  }

  async retryAndGet(queue: string, id: string, payload?: Record<string, Json>): Promise<Job> {
    const k = this.ctx.keys(queue);
    const [[code, status], job] = await this.ctx.runAndRead<[number, string]>(
      'retryJob',
      [k.failed, k.waiting, k.events, k.wake, k.meta],
      [k.base, id, payload === undefined ? '' : JSON.stringify(payload)],
      queue,
      id,
    );
    if (code < 0 || !job) throw errorFromCode(code < 0 ? code : ScriptErrorCode.JobNotFound, id, status, 'retry');
    return job;
  }

  async revive(j: ReviveJobInput): Promise<Job | null> {
    const k = this.ctx.keys(j.queue);
    const [[code], job] = await this.ctx.runAndRead<[number, string]>(
      'reviveJob',
      [k.waiting, k.events, k.wake, k.meta],
      [
        k.base, j.id, j.type, j.payload, j.priority, `${j.maxAttempts};${j.timeoutMs};${encodeBackoff(j.backoff)}`,
        j.createdAt, j.executionSeq, j.idempotencyKey ?? '', j.newPayload ? '1' : '0', j.concurrencyKey ?? '', flowField(j.flow),
      ],
      j.queue,
      j.id,
    );
    if (code < 0) throw errorFromCode(code, j.id, undefined, 'retry');
    return code === 1 ? job : null;
  }

  async purge(queue: string, chunk: number): Promise<{ purged: number; more: boolean }> {
    const k = this.ctx.keys(queue);
    const [purged, taken] = await this.ctx.scripts.run<[number, number]>('purgeDlq', [k.failed, k.events], [k.base, chunk]);
    if (Number(purged) < 0) throw errorFromCode(Number(purged), '', undefined, 'purge');
    return { purged: Number(purged), more: Number(taken) >= chunk };
  }
}
