import 'reflect-metadata';
import type { ErrorDetail } from './error-envelope';

/** Where @nestjs/swagger keeps a property's OpenAPI options (`@ApiProperty({...})`). */
const API_PROPERTY = 'swagger/apiModelProperties';

const nullableCache = new WeakMap<object, Map<string, boolean | undefined>>();

/**
 * Whether a DTO property accepts `null`: true when its OpenAPI metadata says
 * `nullable: true`, false when it is documented without, undefined when the
 * class does not document it (an unknown field: the whitelist refuses it).
 */
function nullable(proto: object, key: string): boolean | undefined {
  let byKey = nullableCache.get(proto);
  if (!byKey) nullableCache.set(proto, (byKey = new Map()));
  if (byKey.has(key)) return byKey.get(key);
  const meta = Reflect.getMetadata(API_PROPERTY, proto, key) as { nullable?: boolean } | undefined;
  const v = meta === undefined ? undefined : meta.nullable === true;
  byKey.set(key, v);
  return v;
}

/**
 * `null` is a value, not an absence: class-validator's `@IsOptional` lets it
 * through every other rule, so a field sent as `null` would reach the
 * services unchecked. One rule for every DTO instead: a documented field may
 * be `null` only where its `@ApiProperty` says `nullable: true` (so the
 * OpenAPI document and the validation agree); elsewhere it is refused.
 * Nested DTO instances (class-transformer `@Type`) are checked too; plain
 * objects (a job's `payload`, a `result`) are data, not DTOs, and are left alone.
 * No recursion depth concerns: bodies nest at most MAX_JSON_DEPTH levels.
 * @param dto a class instance made from the request body or query.
 * @returns `{path, message: 'must not be null'}` per refused field (dotted paths, array indexes).
 */
export function nullFieldDetails(dto: unknown, path = ''): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  if (dto === null || typeof dto !== 'object') return out;
  if (Array.isArray(dto)) {
    dto.forEach((v, i) => out.push(...nullFieldDetails(v, path ? `${path}.${i}` : String(i))));
    return out;
  }
  const proto = Object.getPrototypeOf(dto) as object | null;
  if (proto === null || proto === Object.prototype) return out;
  for (const key of Object.keys(dto)) {
    const v = (dto as Record<string, unknown>)[key];
    const p = path ? `${path}.${key}` : key;
    if (v === null) {
      if (nullable(proto, key) === false) out.push({ path: p, message: 'must not be null' });
    } else if (typeof v === 'object') {
      out.push(...nullFieldDetails(v, p));
    }
  }
  return out;
}
