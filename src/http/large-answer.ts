import { Readable } from 'node:stream';
import { CallHandler, ExecutionContext, Injectable, NestInterceptor, StreamableFile } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { map, type Observable } from 'rxjs';
import { heavyTurn } from './heavy-turns';
import { hidePayloadsIn } from '../core/hidden-payloads';
import { bodyBytesOf, bodySinceOf, payloadsHidden } from './request-notes';

/** A request body from this size on gets its answer written in slices (bytes; as src/server/json-body.ts queues its parse). */
export const LARGE_ANSWER_BODY_BYTES = 1_048_576;

/** Time one slice of an answer may take to serialize, ms: a slice is a heavy step (src/http/heavy-turns.ts). */
const SLICE_MS = 50;

/**
 * The JSON text of `{...rest, jobs: [...]}` (`jobs` last, as the routes put it),
 * in slices of about {@link SLICE_MS} of serializing each, one per heavy turn:
 * the same bytes as `JSON.stringify`, without holding the event loop for the
 * whole of a 16 MiB answer.
 * @param since when the request arrived (ms since the epoch): the order of heavy turns.
 */
export async function* jobsJsonSlices(answer: { jobs: unknown[] } & Record<string, unknown>, since?: number): AsyncGenerator<string> {
  const { jobs, ...rest } = answer;
  const head = JSON.stringify(rest);
  yield `${head === '{}' ? '{' : `${head.slice(0, -1)},`}"jobs":[`;
  let i = 0;
  while (i < jobs.length) {
    await heavyTurn(since);
    const from = Date.now();
    const parts: string[] = [];
    do parts.push(JSON.stringify(jobs[i++]));
    while (i < jobs.length && Date.now() - from < SLICE_MS);
    yield (parts.length === i ? '' : ',') + parts.join(',');
  }
  yield ']}';
}

/**
 * For `POST /jobs/batch` and `POST /flows`: when the request's body was
 * large (≥ {@link LARGE_ANSWER_BODY_BYTES}), the answer (`{jobs: [...]}`,
 * as large as the body: the jobs with their payloads) is streamed in slices
 * ({@link jobsJsonSlices}, `Transfer-Encoding: chunked`) rather than
 * serialized and written at once (measured: ~1 s of one event-loop turn for
 * a 15 MiB flow on a loaded 2-core host, docs/benchmarks.md "Large bodies").
 * Status and headers are the route's; smaller answers are left alone.
 */
@Injectable()
export class LargeAnswerInterceptor implements NestInterceptor {
  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = ctx.switchToHttp().getRequest<FastifyRequest>();
    if (bodyBytesOf(req) < LARGE_ANSWER_BODY_BYTES) return next.handle();
    return next.handle().pipe(
      map((answer: unknown) => {
        if (!answer || typeof answer !== 'object' || !Array.isArray((answer as { jobs?: unknown }).jobs)) return answer;
        // The global hidePayloads interceptor sees a stream from here on: hide before slicing.
        const out = (payloadsHidden(req) ? hidePayloadsIn(answer) : answer) as { jobs: unknown[] };
        const stream = Readable.from(jobsJsonSlices(out, bodySinceOf(req)), { objectMode: false });
        return new StreamableFile(stream, { type: 'application/json; charset=utf-8' });
      }),
    );
  }
}

/**
 * Before a route builds the jobs of a large body (≥ {@link LARGE_ANSWER_BODY_BYTES}):
 * waits for a heavy turn of its own, so that the body's validation (the turn
 * before) and the jobs' normalization (this one) do not hold the loop together.
 */
export async function turnForLargeBody(req: FastifyRequest): Promise<void> {
  if (bodyBytesOf(req) >= LARGE_ANSWER_BODY_BYTES) await heavyTurn(bodySinceOf(req));
}
