import { PipeTransform } from '@nestjs/common';
import { validateSync, ValidatorOptions } from 'class-validator';
import { ValidationError } from '../../core/errors';
import { nullFieldDetails } from '../../http/null-fields';
import { flattenValidationErrors } from '../../http/validation';
import { BackoffDto, DebounceDto, EnqueueBatchDto, EnqueueJobDto } from './enqueue-job.dto';
import { compileEnqueueValidators, isValidBatchBody, isValidJobBody } from './enqueue-schema';

/** The same options as the global ValidationPipe (src/http/validation.ts). */
const OPTIONS: ValidatorOptions = {
  whitelist: true,
  forbidNonWhitelisted: true,
  forbidUnknownValues: false,
  validationError: { target: false, value: false },
};

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Field problems found while building the instances (see {@link assign}). */
export type Details = { path: string; message: string }[];

/**
 * `Object.assign(new Cls(), v)`, except for an own `constructor` key: on the
 * instance it would hide the class from class-validator (which reads
 * `obj.constructor` to find the rules), so it is reported as the unknown
 * field it is and left out.
 */
export function assign<T extends object>(instance: T, v: Record<string, unknown>, path: string, extra: Details): T {
  if (Object.hasOwn(v, 'constructor')) {
    extra.push({ path: path + 'constructor', message: 'is not allowed (unknown field)' });
    return Object.assign(instance, Object.fromEntries(Object.entries(v).filter(([k]) => k !== 'constructor')));
  }
  return Object.assign(instance, v);
}

/** A job body as its DTO instance (`make`: EnqueueJobDto or a subclass, e.g. a flow's job), nested DTOs too. */
export function toJobDto(v: unknown, path: string, extra: Details, make: () => EnqueueJobDto = () => new EnqueueJobDto()): unknown {
  if (!isPlainObject(v)) return v;
  const dto = assign(make(), v, path, extra);
  if (isPlainObject(dto.backoff)) dto.backoff = assign(new BackoffDto(), dto.backoff as Record<string, unknown>, path + 'backoff.', extra);
  if (isPlainObject(dto.debounce)) dto.debounce = assign(new DebounceDto(), dto.debounce as Record<string, unknown>, path + 'debounce.', extra);
  return dto;
}

/** Runs the DTO rules (options as the global pipe) and the null rule; @throws ValidationError with every detail. */
export function check<T extends object>(dto: T, extra: Details): T {
  const errors = validateSync(dto, OPTIONS);
  const nulls = nullFieldDetails(dto);
  if (errors.length || extra.length || nulls.length) {
    const details = [...extra, ...flattenValidationErrors(errors), ...nulls];
    throw new ValidationError(`invalid request: ${details.map((d) => d.path || 'body').join(', ')}`, details);
  }
  return dto;
}

export function requireObject(body: unknown): asserts body is Record<string, unknown> {
  if (!isPlainObject(body)) throw new ValidationError('the body must be a JSON object', [{ path: '', message: 'must be a JSON object' }]);
}

/**
 * Validation of the `POST /jobs` body: the same class-validator rules and
 * options as the global pipe, on the same DTO, but without class-transformer
 * (its deep copy of the payload was the largest single cost of the enqueue
 * hot path; the DTO only needs its nested `backoff` and `debounce` as class instances),
 * and the same `null` rule (src/http/null-fields.ts).
 * A body the compiled validator (./enqueue-schema.ts) accepts is returned as
 * parsed, a plain object (the hot path: no DTO instances, no class-validator
 * walk); any other goes through class-validator, which names every problem.
 * The route's parameter is typed with an interface so the global pipe skips it.
 * @throws ValidationError (400) with `{path, message}` per failed rule.
 */
export class EnqueueJobPipe implements PipeTransform<unknown, EnqueueJobBody> {
  constructor() {
    compileEnqueueValidators();
  }

  transform(body: unknown): EnqueueJobBody {
    if (isValidJobBody(body)) return body as EnqueueJobBody;
    requireObject(body);
    const extra: Details = [];
    return check(toJobDto(body, '', extra) as EnqueueJobDto, extra);
  }
}

/** {@link EnqueueJobPipe} for `POST /jobs/batch` (`{jobs: [...]}`; paths `jobs.<i>.<field>`). */
export class EnqueueBatchPipe implements PipeTransform<unknown, EnqueueBatchBody> {
  constructor() {
    compileEnqueueValidators();
  }

  transform(body: unknown): EnqueueBatchBody {
    if (isValidBatchBody(body)) return body as EnqueueBatchBody;
    requireObject(body);
    const extra: Details = [];
    const dto = assign(new EnqueueBatchDto(), body, '', extra);
    if (Array.isArray(dto.jobs)) dto.jobs = dto.jobs.map((j, i) => toJobDto(j, `jobs.${i}.`, extra)) as EnqueueJobDto[];
    return check(dto, extra);
  }
}

/** Compile-time shape of a validated body (an interface, so Nest's global pipe leaves the parameter alone). */
export type EnqueueJobBody = Pick<EnqueueJobDto, keyof EnqueueJobDto>;
export type EnqueueBatchBody = Pick<EnqueueBatchDto, keyof EnqueueBatchDto>;
