import { UnavailableError } from '../core/errors';

/**
 * What a POST /flows that failed after its flow was recorded left, as its
 * rollback found it (FlowsService): `clean` when every job is known not to
 * run — cancelled before it started, or in neither Redis nor PostgreSQL and
 * never confirmed created — and the record is gone; else the jobs it could not
 * confirm (created ones Redis lost, which PostgreSQL or a restore may bring
 * back; jobs already started or ended; errors).
 */
export interface RollbackOutcome {
  clean: boolean;
  /** Ids of the jobs not known to be gone, with why (at most a few kept). */
  unsure: { id: string; why: string }[];
  /** How many jobs are not known to be gone. */
  unsureCount: number;
  /** The record could not be deleted. */
  recordKept: boolean;
}

/** The `details` entry naming a flow (API.md v1.3: every 503 of POST /flows once a flow id was assigned). */
export const flowIdDetail = (flowId: string) => [{ path: 'flowId', message: flowId }];

/** A 503 of POST /flows: the message, the flow id in `details`, Retry-After 1 s. */
export function flowUnavailable(message: string, flowId: string): UnavailableError {
  return Object.assign(new UnavailableError(message), { details: flowIdDetail(flowId), retryAfterMs: 1000 });
}

/**
 * The 503 of a submission that failed after its record was written, saying
 * truthfully what is left: "submit again" only when the rollback confirmed
 * that nothing of it will run.
 * @param cause the failure's own message (as the API would answer it).
 * @param keyed the request carried an idempotencyKey (freed when clean).
 */
export function submissionFailed(flowId: string, jobs: number, cause: string, outcome: RollbackOutcome, keyed: boolean): UnavailableError {
  const head = `POST /flows: flow ${flowId} failed after it was recorded (${cause})`;
  if (outcome.clean) {
    return flowUnavailable(`${head}; rolled back: none of its ${jobs} jobs will run${keyed ? ' and its idempotencyKey is free again' : ''}: submit again`, flowId);
  }
  const which = outcome.unsure.map((u) => `${u.id} ${u.why}`).join(', ');
  const what = outcome.unsureCount
    ? `${outcome.unsureCount} of its ${jobs} jobs may still exist (${which}${outcome.unsureCount > outcome.unsure.length ? ', …' : ''})`
    : 'its record may still exist';
  return flowUnavailable(
    `${head}; the rollback could not confirm it is gone: ${what}. GET /flows/${flowId} shows what exists, DELETE /flows/${flowId} cancels what is left; ` +
      (keyed
        ? 'the idempotencyKey stays with this flow: a retry with it answers this flow once it is complete, 503 until then'
        : 'a retry without an idempotencyKey makes a second flow'),
    flowId,
  );
}

/** A retry whose idempotencyKey names a flow not completely submitted (yet). */
export function notYetSubmitted(flowId: string): UnavailableError {
  return flowUnavailable(
    `POST /flows: this idempotencyKey belongs to flow ${flowId}, which is not completely submitted: an earlier request may still be submitting it ` +
      `(retry in a moment with the same idempotencyKey: 200 with the flow once it is complete), or it failed midway ` +
      `(GET /flows/${flowId} shows what exists, DELETE /flows/${flowId} cancels it; the key stays with it for IDEMPOTENCY_TTL_MS)`,
    flowId,
  );
}

/**
 * What the answer deadline's 503 advises for a POST /flows whose flow id is
 * assigned (src/http/request-notes.ts `adviseRetry`): the flow may exist
 * (its submission goes on), and how to find out or retry.
 */
export function flowRetryAdvice(flowId: string, keyed: boolean): { message: string; details: { path: string; message: string }[] } {
  return {
    message: keyed
      ? `flow ${flowId} may exist (its submission goes on): retry with the same idempotencyKey: 200 with the flow once it is complete, 503 until then`
      : `flow ${flowId} may exist (its submission goes on): GET /flows/${flowId} tells; a retry without an idempotencyKey makes a second flow`,
    details: flowIdDetail(flowId),
  };
}
