import { state } from './state.mjs';
/** k6's check(): runs each predicate on `value`, records pass/fail per name, true when all pass. */
export function check(value, sets) {
  let all = true;
  for (const [name, fn] of Object.entries(sets)) {
    let ok = false;
    try {
      ok = !!fn(value);
    } catch {
      ok = false;
    }
    const c = (state.checks[name] ??= { pass: 0, fail: 0 });
    if (ok) c.pass++;
    else c.fail++;
    all &&= ok;
  }
  return all;
}
