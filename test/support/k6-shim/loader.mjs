/* global URL */
// Resolve hook: `k6`, `k6/http`, `k6/execution`, `k6/metrics` -> the files of this directory.
const MAP = { k6: 'k6.mjs', 'k6/http': 'http.mjs', 'k6/execution': 'execution.mjs', 'k6/metrics': 'metrics.mjs' };
export async function resolve(specifier, context, next) {
  if (MAP[specifier]) return { url: new URL(MAP[specifier], import.meta.url).href, shortCircuit: true };
  return next(specifier, context);
}
