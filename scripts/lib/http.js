/*
 * A tiny JSON-over-HTTP client for the scripts (demo, load, monitor) on
 * Node's global fetch: no dependencies, so monitor.js can use it standalone.
 */

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * One request. `body` (if given) is sent as JSON.
 * @returns {Promise<{status: number, headers: Headers, body: any}>} body is the
 *   parsed JSON, or the raw text when the response is not JSON.
 * @throws on network errors and after timeoutMs (default 10 s).
 */
async function request(method, url, body, { headers = {}, timeoutMs = 10000 } = {}) {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  let parsed = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON (e.g. an HTML page): keep the text
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

const getJson = (url, timeoutMs) => request('GET', url, undefined, { timeoutMs });

/**
 * A client bound to a base URL: `api.get('/jobs/1')`, `api.post('/jobs', {...})`,
 * `api.put(...)`. Same result shape as request(). `headers` go on every
 * request (e.g. `{ authorization: 'Bearer sk_...' }`).
 */
function client(base, { headers = {} } = {}) {
  const o = (opts = {}) => ({ ...opts, headers: { ...headers, ...opts.headers } });
  return {
    base,
    get: (p, opts) => request('GET', base + p, undefined, o(opts)),
    post: (p, body, opts) => request('POST', base + p, body, o(opts)),
    put: (p, body, opts) => request('PUT', base + p, body, o(opts)),
  };
}

/**
 * Calls `fn` until it returns a truthy value, every intervalMs, up to timeoutMs.
 * @returns the truthy value, or null on timeout (the caller decides what that means).
 */
async function pollUntil(fn, { intervalMs = 500, timeoutMs = 60000 } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() + intervalMs > deadline) return null;
    await sleep(intervalMs);
  }
}

module.exports = { sleep, request, getJson, client, pollUntil };
