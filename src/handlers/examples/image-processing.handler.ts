import type { JobContext } from '../../core/handler';
import { UnrecoverableError } from '../../core/handler';
import type { Json } from '../../core/job';
import { JobHandler } from '../job-handler.decorator';
import { sleep } from '../../core/sleep';
import type { JobHandlerClass } from '../handler-class';

const SIZES = new Set(['thumb', 'small', 'medium', 'large']);

/**
 * EXAMPLE handler (simulated): "resizes" `{imageUrl, sizes: [...]}`,
 * reporting progress per size. Unknown sizes are unrecoverable.
 */
@JobHandler('image_processing')
export class ImageProcessingHandler implements JobHandlerClass {
  async handle(p: Record<string, Json>, ctx: JobContext) {
    if (typeof p.imageUrl !== 'string') throw new UnrecoverableError('payload.imageUrl must be a string');
    const sizes = Array.isArray(p.sizes) ? p.sizes : ['thumb'];
    for (const s of sizes) if (typeof s !== 'string' || !SIZES.has(s)) throw new UnrecoverableError(`unknown size ${JSON.stringify(s)}`);
    const outputs: string[] = [];
    for (let i = 0; i < sizes.length; i++) {
      await sleep(30 + Math.floor(Math.random() * 40), ctx.signal);
      outputs.push(`${p.imageUrl}?size=${sizes[i]}`);
      await ctx.progress(Math.round(((i + 1) / sizes.length) * 100));
    }
    ctx.log(`resized to ${sizes.join(', ')}`);
    return { outputs };
  }
}
