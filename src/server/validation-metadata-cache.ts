import { getMetadataStorage } from 'class-validator';

type Storage = ReturnType<typeof getMetadataStorage>;
type Lookup = Storage['getTargetValidationMetadatas'];
type ValidationMetadata = ReturnType<Lookup>[number];

const wrapped = new WeakSet<Storage>();

/**
 * Memoizes class-validator's rule lookup per DTO class.
 *
 * Why: `getTargetValidationMetadatas` rebuilds a class's rule list on every
 * `validate()` call, scanning the rules of every decorated class in the
 * process for inheritance (`instanceof` per class); with the app's ~40 DTO
 * classes that scan was the largest class-validator cost of `POST /jobs`.
 * The rules only change when a decorator runs (class definition time), so
 * the memo is dropped whenever a rule or constraint is added; results are
 * otherwise the same arrays class-validator would build (it only reads them).
 *
 * Keyed by (class, schema name, always, strictGroups, groups). Idempotent.
 * @param storage the class-validator metadata storage (the global one by default).
 */
export function cacheValidationMetadata(storage: Storage = getMetadataStorage()): void {
  if (wrapped.has(storage)) return;
  wrapped.add(storage);
  const lookup: Lookup = storage.getTargetValidationMetadatas.bind(storage);
  const group = storage.groupByPropertyName.bind(storage);
  let byTarget = new WeakMap<object, Map<string, ValidationMetadata[]>>();
  let grouped = new WeakMap<ValidationMetadata[], Record<string, ValidationMetadata[]>>();
  const invalidate = () => {
    byTarget = new WeakMap();
    grouped = new WeakMap();
  };

  storage.getTargetValidationMetadatas = (target, schema, always, strictGroups, groups) => {
    const key = `${schema}\u0000${always}\u0000${strictGroups}\u0000${groups ? groups.join('\u0001') : ''}`;
    let perTarget = byTarget.get(target);
    if (!perTarget) byTarget.set(target, (perTarget = new Map()));
    let hit = perTarget.get(key);
    if (!hit) perTarget.set(key, (hit = lookup(target, schema, always, strictGroups, groups)));
    return hit;
  };
  storage.groupByPropertyName = (metadata) => {
    let hit = grouped.get(metadata);
    if (!hit) grouped.set(metadata, (hit = group(metadata)));
    return hit;
  };
  for (const name of ['addValidationMetadata', 'addConstraintMetadata'] as const) {
    const add = storage[name].bind(storage) as (m: unknown) => void;
    (storage as unknown as Record<string, (m: unknown) => void>)[name] = (m) => {
      invalidate();
      add(m);
    };
  }
}
