/* global process, console */
/*
 * Runs load-test.js's functions once under this shim (no k6 here):
 *   node --import ./register.mjs run.mjs <script> <iterations> [KEY=VALUE ...]
 * KEY=VALUE pairs become __ENV. Calls setup(), enqueue() for iterations
 * 0..n-1, dashboard() once, teardown(); prints one JSON line: options,
 * checks, counters, requests (status and Authorization per request name), and
 * `error` when a function threw.
 */
import { pathToFileURL } from 'node:url';
import { state } from './state.mjs';

const [script, n, ...pairs] = process.argv.slice(2);
globalThis.__ENV = Object.fromEntries(pairs.map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)]));
const mod = await import(pathToFileURL(script).href);
const out = { options: mod.options };
try {
  const data = mod.setup();
  for (let i = 0; i < Number(n); i++) {
    state.iteration = i;
    mod.enqueue();
  }
  mod.dashboard();
  mod.teardown(data);
} catch (e) {
  out.error = e.message;
}
console.log(JSON.stringify({ ...out, checks: state.checks, counters: state.counters, requests: state.requests }));
