/**
 * A stand-in for the Sluice API in component tests: answers by "METHOD /path"
 * (query ignored for matching, recorded for assertions). Anything not routed is a 404 envelope.
 */
type Handler = (req: { url: URL; body: unknown }) => { status?: number; body: unknown } | unknown;

let routes = new Map<string, Handler>();
export const calls: { method: string; url: URL; body: unknown }[] = [];

export function route(key: string, h: Handler | unknown): void {
  routes.set(key, typeof h === 'function' ? (h as Handler) : () => h);
}

export function resetServer(): void {
  routes = new Map();
  calls.length = 0;
}

/** The error envelope of API.md. */
export const envelope = (status: number, code: string, message: string, details: { path: string; message: string }[] = []) => ({ status, body: { error: { code, message, details, requestId: 'r1' } } });

export async function serverFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const req = input instanceof Request ? input : new Request(String(input), init);
  const url = new URL(req.url);
  const text = req.method === 'GET' || req.method === 'HEAD' ? '' : await req.text();
  const body = text ? JSON.parse(text) : undefined;
  calls.push({ method: req.method, url, body });
  const h = routes.get(`${req.method} ${url.pathname}`);
  if (!h) return json(404, { error: { code: 'not_found', message: `no route ${req.method} ${url.pathname}`, details: [], requestId: 'r0' } });
  const out = h({ url, body });
  if (out && typeof out === 'object' && 'body' in out && ('status' in out || Object.keys(out).length === 1)) {
    const o = out as { status?: number; body: unknown };
    return json(o.status ?? 200, o.body);
  }
  return json(200, out);
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}
