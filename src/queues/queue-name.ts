import { SluiceError, ValidationError } from '../core/errors';
import { LIMITS } from '../core/job-options';

/** Unknown queue (HTTP 404 `not_found`): never configured, paused or given a job. */
export class QueueNotFoundError extends SluiceError {
  constructor(readonly queue: string) {
    super('not_found', `queue "${queue}" not found`);
  }
}

/**
 * Checks a queue name taken from a URL path.
 * @returns the name.
 * @throws ValidationError (400, detail path `name`) unless it matches ^[a-z0-9][a-z0-9_-]{0,63}$.
 */
export function checkQueueName(name: string): string {
  if (!LIMITS.queuePattern.test(name)) {
    throw new ValidationError(`invalid queue name "${name.slice(0, 80)}"`, [{ path: 'name', message: `must match ${LIMITS.queuePattern.source}` }]);
  }
  return name;
}
