import {
  IsInt,
  IsOptional,
  IsString,
  Max,
  MetadataStorage,
  ValidatorOptions,
  validateSync,
} from 'class-validator';
import { cacheValidationMetadata } from './validation-metadata-cache';
import { EnqueueJobDto } from '../jobs/dto/enqueue-job.dto';

const OPTS: ValidatorOptions = {
  whitelist: true,
  forbidNonWhitelisted: true,
  forbidUnknownValues: false,
};
const summary = (o: object) =>
  validateSync(o, OPTS)
    .map(
      (e) =>
        `${e.property}:${Object.keys(e.constraints ?? {})
          .sort()
          .join('|')}`,
    )
    .sort();

describe('cacheValidationMetadata', () => {
  const bodies: Record<string, unknown>[] = [
    { type: 'send_email', payload: { to: 'a@b' } },
    { type: '', queue: 7, priority: 11, extra: 1 },
    { type: 'x', backoff: 'fixed', timeoutMs: -1, maxAttempts: 0 },
    { type: 'x', delayMs: 5, runAt: '2026-01-01T00:00:00Z', idempotencyKey: '' },
  ];

  it('gives the same errors as the uncached lookup, and serves repeats from the memo', () => {
    const before = bodies.map((b) => summary(Object.assign(new EnqueueJobDto(), b)));
    const storage = (global as unknown as { classValidatorMetadataStorage: MetadataStorage })
      .classValidatorMetadataStorage;
    const original = storage.getTargetValidationMetadatas;
    let calls = 0;
    storage.getTargetValidationMetadatas = function (...a: Parameters<typeof original>) {
      calls++;
      return original.apply(this, a);
    };
    cacheValidationMetadata(storage);
    const after = bodies.map((b) => summary(Object.assign(new EnqueueJobDto(), b)));
    const again = bodies.map((b) => summary(Object.assign(new EnqueueJobDto(), b)));
    expect(after).toEqual(before);
    expect(again).toEqual(before);
    expect(before.filter((s) => s.length > 0)).toHaveLength(3); // the three bad bodies fail
    expect(calls).toBe(1); // one real lookup for EnqueueJobDto, then the memo
  });

  it('picks up rules added after the first validation (a class decorated later, a subclass)', () => {
    cacheValidationMetadata();
    class Late {
      @IsString() name!: string;
    }
    expect(summary(Object.assign(new Late(), { name: 1 }))).toEqual(['name:isString']);
    // A rule added to an already validated (and memoized) class.
    IsInt()(Late.prototype, 'count');
    expect(summary(Object.assign(new Late(), { name: 'ok', count: 'x' }))).toEqual(['count:isInt']);
    class Later extends Late {
      @IsOptional() @IsInt() @Max(5) n?: number;
    }
    expect(summary(Object.assign(new Later(), { name: 'ok', count: 1, n: 9 }))).toEqual(['n:max']);
    expect(summary(Object.assign(new Later(), { name: 2, count: 1, n: 1, zzz: 1 }))).toEqual([
      'name:isString',
      'zzz:whitelistValidation',
    ]);
  });
});
