import { HttpException } from '@nestjs/common';
import type { OpenAPIObject } from '@nestjs/swagger';
import { SluiceError } from '../core/errors';
import { clientErrorStatus } from './client-error';
import { mapError } from '../http/error-envelope';
import { completeDocument } from './openapi-document';
import { ERROR_CODES } from '../http/openapi/schemas';

/** Every envelope code the server can answer, from every source mapError knows. */
function answerableCodes(): Set<string> {
  const errors: unknown[] = [];
  for (let status = 400; status < 600; status++) errors.push(new HttpException('x', status));
  // Fastify's and Node's errors carry a 4xx statusCode (src/server/client-error.ts writes Node's parser errors through mapError).
  for (let status = 400; status < 500; status++) errors.push(Object.assign(new Error('x'), { statusCode: status }));
  for (const code of ['ERR_HTTP_REQUEST_TIMEOUT', 'HPE_HEADER_OVERFLOW', 'HPE_INVALID_CHUNK_SIZE', undefined]) errors.push(Object.assign(new Error('x'), { statusCode: clientErrorStatus(code).status }));
  for (const code of [...ERROR_CODES, 'decode_error', 'no_such_code']) errors.push(new SluiceError(code, 'x'));
  errors.push(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), new Error('boom'), 'a string');
  return new Set(errors.map((e) => mapError(e).code));
}

describe('the OpenAPI document and the error mapper agree', () => {
  it('the Error schema lists every code the server can answer (the HTTP layer’s 408/414/431 included)', () => {
    const codes = [...answerableCodes()];
    expect(codes).toEqual(expect.arrayContaining(['request_timeout', 'uri_too_long', 'headers_too_large']));
    expect(codes.filter((c) => !(ERROR_CODES as readonly string[]).includes(c))).toEqual([]);
  });

  it("each common answer's example code is the server's code for its status", () => {
    // One route that gets every common answer: a body method with a path parameter, credentials, rate limited.
    const doc = { openapi: '3.0.0', info: { title: 't', version: '1' }, paths: { '/things/{id}': { post: { responses: {} } } } } as unknown as OpenAPIObject;
    completeDocument(doc, () => ['viewer']);
    const op = (doc.paths['/things/{id}'] as { post: { responses: Record<string, { $ref: string }> } }).post;
    const answers = doc.components!.responses as Record<string, { content: Record<string, { example: { error: { code: string } } }> }>;
    const seen = Object.entries(op.responses).map(([status, r]) => {
      const name = r.$ref.split('/').pop()!;
      return { status, documented: answers[name].content['application/json'].example.error.code, served: mapError(new HttpException('x', Number(status))).code };
    });
    expect(seen.map((x) => x.status)).toEqual(['400', '401', '403', '404', '408', '413', '414', '415', '429', '431', '503']);
    expect(seen.filter((x) => x.documented !== x.served)).toEqual([]);
  });
});
