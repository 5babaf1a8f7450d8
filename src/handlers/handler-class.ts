import type { JobContext } from '../core/handler';
import type { Json } from '../core/job';

/** The shape of a class decorated with @JobHandler. */
export interface JobHandlerClass {
  handle(payload: Record<string, Json>, ctx: JobContext): Promise<Json | void> | Json | void;
}
