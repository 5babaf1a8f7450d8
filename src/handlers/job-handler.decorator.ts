import { Injectable, SetMetadata, applyDecorators } from '@nestjs/common';

export const JOB_HANDLER_METADATA = 'sluice:job-handler';

/**
 * Marks a class as the handler of one job type. The class must have a
 * `handle(payload, ctx)` method; it is discovered at boot (see
 * HandlerRegistry), so adding a job type is one file with this decorator.
 * A second handler for the same type stops the boot.
 *
 * @example
 *   @JobHandler('send_email')
 *   export class SendEmailHandler implements JobHandlerClass { async handle(payload, ctx) { ... } }
 */
export function JobHandler(type: string): ClassDecorator {
  return applyDecorators(Injectable(), SetMetadata(JOB_HANDLER_METADATA, type));
}
