/* global URL */
import { execFileSync } from 'node:child_process';
import { state } from './state.mjs';

/** Go's canonical header key, as k6 gives response headers: idempotent-replayed -> Idempotent-Replayed. */
const canonical = (k) => k.toLowerCase().replace(/(^|-)([a-z])/g, (_, d, c) => d + c.toUpperCase());

/** k6 is synchronous: one curl per request. Records method, path, status and Authorization per request name. */
function request(method, url, body, params = {}) {
  const args = ['-s', '-i', '-X', method];
  for (const [k, v] of Object.entries(params.headers ?? {})) args.push('-H', `${k}: ${v}`);
  if (body !== undefined && body !== null) args.push('--data-binary', '@-');
  const raw = execFileSync('curl', [...args, url], { input: body ?? '', maxBuffer: 1 << 24 }).toString();
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).split('\r\n');
  const status = Number(head[0].split(' ')[1]);
  const headers = {};
  for (const line of head.slice(1)) {
    const i = line.indexOf(':');
    headers[canonical(line.slice(0, i).trim())] = line.slice(i + 1).trim();
  }
  const text = raw.slice(split + 4);
  const name = params.tags?.name ?? `${method} ${new URL(url).pathname}`;
  const auth = Object.entries(params.headers ?? {}).find(([k]) => k.toLowerCase() === 'authorization')?.[1] ?? null;
  (state.requests[name] ??= []).push({ status, auth });
  return {
    status,
    headers,
    body: text,
    json(path) {
      const v = JSON.parse(text);
      return path ? path.split('.').reduce((o, k) => (o == null ? undefined : o[k]), v) : v;
    },
  };
}

export default {
  get: (url, params) => request('GET', url, null, params),
  post: (url, body, params) => request('POST', url, body, params),
  expectedStatuses: (...s) => ({ expectedStatuses: s }),
};
