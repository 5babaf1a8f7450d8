import { applyDecorators, ValidationPipe } from '@nestjs/common';
import { Transform } from 'class-transformer';
import type { ValidatorOptions } from '@nestjs/common/interfaces/external/validator-options.interface';
import { IsInt, Max, Min, type ValidationError as ClassValidatorError } from 'class-validator';
import { ValidationError } from '../core/errors';
import type { ErrorDetail } from './error-envelope';
import { nullFieldDetails } from './null-fields';

/**
 * Flattens class-validator's error tree into API.md `details`:
 * `{path, message}` per failed constraint, paths dotted with array indexes
 * (`jobs.3.backoff.delayMs`). An unknown field reports "is not allowed".
 */
export function flattenValidationErrors(errors: ClassValidatorError[], prefix = ''): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  for (const e of errors) {
    const path = prefix ? `${prefix}.${e.property}` : e.property;
    for (const [rule, text] of Object.entries(e.constraints ?? {})) {
      out.push({ path, message: rule === 'whitelistValidation' ? 'is not allowed (unknown field)' : text.replace(new RegExp(`^${escapeRe(e.property)} `), '') });
    }
    if (e.children?.length) out.push(...flattenValidationErrors(e.children, path));
  }
  return out;
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The 400 `validation_failed` error for these field problems. */
export function validationFailure(details: ErrorDetail[]): ValidationError {
  return new ValidationError(details.length ? `invalid request: ${details.map((d) => d.path || 'body').join(', ')}` : 'invalid request', details);
}

/** The ValidationPipe plus {@link nullFieldDetails}: `null` only where a field is documented nullable. */
class SluiceValidationPipe extends ValidationPipe {
  protected override async validate(object: object, options?: ValidatorOptions): Promise<ClassValidatorError[]> {
    const errors = await super.validate(object, options);
    const nulls = nullFieldDetails(object);
    if (nulls.length) throw validationFailure([...flattenValidationErrors(errors), ...nulls]);
    return errors;
  }
}

/**
 * The one global pipe: DTOs are validated with class-validator, unknown
 * fields are rejected (not silently dropped), `null` is refused unless the
 * field is documented nullable, query strings are converted
 * to the DTO's types, and a failure throws the core ValidationError that the
 * exception filter renders as 400 `validation_failed` with `details`.
 */
export function createValidationPipe(): ValidationPipe {
  return new SluiceValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    forbidUnknownValues: false,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => validationFailure(flattenValidationErrors(errors)),
  });
}

/**
 * For an integer query parameter, in place of `@Type(() => Number)`: decimal
 * digits only (an optional `-`), so `0x10`, `1e1`, `0b11`, ` 10` or `10.0`
 * stay strings and fail the field's `@IsInt` (400) instead of being read as
 * numbers JavaScript's `Number()` would make of them (API.md v1.2).
 */
export function DecimalInt(): PropertyDecorator {
  return Transform(({ value }: { value: unknown }) => (typeof value === 'string' && /^-?[0-9]{1,16}$/.test(value) ? Number(value) : value));
}

/**
 * An integer field within `min..max`, refused with one message naming the
 * range (`must be an integer 1..500`) whichever bound fails.
 */
export function IntInRange(min: number, max: number): PropertyDecorator {
  const message = `must be an integer ${min}..${max}`;
  return applyDecorators(IsInt({ message }), Min(min, { message }), Max(max, { message }));
}

/** {@link IntInRange} for a query parameter: decimal digits only ({@link DecimalInt}). */
export function QueryIntInRange(min: number, max: number): PropertyDecorator {
  return applyDecorators(DecimalInt(), IntInRange(min, max));
}
