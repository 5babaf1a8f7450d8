import { applyDecorators } from '@nestjs/common';
import { ApiHeader, ApiProperty, ApiResponse } from '@nestjs/swagger';
import type { HeadersObject, SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';

/** Marker the document post-processing turns into "any JSON" (see {@link ApiJsonProperty}). */
export const JSON_MARKER = 'x-sluice-any-json';

/** `#/components/schemas/<name>`. */
export const schemaRef = (name: string): SchemaObject => ({ $ref: `#/components/schemas/${name}` }) as SchemaObject;

/** `#/components/headers/<name>` (X-Request-Id, Retry-After, Idempotent-Replayed: src/server/openapi-document.ts). */
export const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/**
 * A success answer of a route: `status` with the body `schema`, a name of
 * components.schemas (src/http/openapi/schemas.ts), `[name]` for an array of
 * them, or a schema object. `headers` are names of components.headers.
 * The common error answers (400/401/403/413/415/429/503…) are added to every
 * route from its `@Access` declaration and shape, not here.
 * @example `@ApiAnswer(200, 'Job', 'the job')` · `@ApiAnswer(200, ['Queue'], 'every queue')`
 */
export function ApiAnswer(status: number, schema: string | [string] | SchemaObject, description: string, headers: string[] = []): MethodDecorator {
  const body = typeof schema === 'string' ? schemaRef(schema) : Array.isArray(schema) ? { type: 'array' as const, items: schemaRef(schema[0]) } : schema;
  const h: HeadersObject = {};
  for (const name of headers) h[name] = headerRef(name);
  return ApiResponse({ status, description, schema: body, ...(headers.length ? { headers: h } : {}) });
}

/**
 * Route-specific error answers, each with the error envelope as its body,
 * e.g. `@ApiErrors([409, 'the job is terminal (code conflict)'])`. Answers
 * every route may give (see {@link ApiAnswer}) are added automatically.
 */
export function ApiErrors(...errors: [status: number, description: string][]): MethodDecorator {
  return applyDecorators(...errors.map(([status, description]) => ApiResponse({ status, description, schema: schemaRef('Error') })));
}

/**
 * A property holding any JSON value (object, array, string, number, boolean
 * or null): documented as the empty schema, which openapi-typescript types
 * `unknown`. `oneOf` narrows it (e.g. `progress`: a number or an object).
 * `nullable` lets the server's null rule (src/http/null-fields.ts) accept
 * `null`; the document drops it (the empty schema admits null already), so
 * say "null included" in the description.
 */
export function ApiJsonProperty(description: string, opts: { required?: boolean; oneOf?: SchemaObject[]; nullable?: boolean } = {}): PropertyDecorator {
  return ApiProperty({ description, required: opts.required ?? false, ...(opts.oneOf ? { oneOf: opts.oneOf } : {}), ...(opts.nullable ? { nullable: true } : {}), [JSON_MARKER]: true } as Parameters<typeof ApiProperty>[0]);
}

/**
 * The optional W3C Trace Context request headers of the enqueue routes
 * (src/telemetry/enqueue-trace.ts): the jobs carry the context to their workers.
 */
export function ApiTraceHeaders(): MethodDecorator {
  return applyDecorators(
    ApiHeader({
      name: 'traceparent',
      required: false,
      description:
        'W3C Trace Context (version 00): the enqueued jobs carry it, and their processing spans continue that trace. A malformed value is ignored (never a 400).',
      schema: { type: 'string', example: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
    }),
    ApiHeader({
      name: 'tracestate',
      required: false,
      description: 'W3C tracestate that goes with `traceparent` (at most 512 characters and 32 members; an invalid list is dropped).',
      schema: { type: 'string', example: 'rojo=00f067aa0ba902b7' },
    }),
  );
}

/** The optional RFC 7240 `Prefer` request header of the enqueue routes (API.md v1.3, src/http/prefer.ts). */
export function ApiPreferMinimal(): MethodDecorator {
  return ApiHeader({
    name: 'Prefer',
    required: false,
    description:
      'RFC 7240. `return=minimal`: each job in the answer is `{id, status}` (same status codes and headers, plus `Preference-Applied: return=minimal`); absent or `return=representation`: the full job. Other preferences are ignored.',
    schema: { type: 'string', example: 'return=minimal' },
  });
}
