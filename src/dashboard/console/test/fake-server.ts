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

/** A flow job as a test describes it: what `GET /flows/:id` and `GET /jobs/:id/dependencies` tell of it. */
export interface FakeFlowJob {
  ref: string;
  id: string;
  status: 'waiting' | 'delayed' | 'active' | 'completed' | 'failed' | 'cancelled' | 'blocked' | null;
  dependsOn: string[];
  result?: unknown;
  lastError?: string | null;
}

/**
 * Serves a flow as the server would (API.md v1.2 "Workflows"): `GET /flows/:flowId` with its
 * status and counts derived from the jobs (docs/api.md's rules), and `GET /jobs/:id/dependencies`
 * of each job. `flowStatus` overrides the derived answer (a 404 envelope for a record gone).
 */
export function serveFlow(flowId: string, jobs: FakeFlowJob[], flowStatus?: { status: number; body: unknown }): void {
  const statuses = ['waiting', 'delayed', 'active', 'completed', 'failed', 'cancelled', 'blocked'] as const;
  const counts = Object.fromEntries(statuses.map((s) => [s, jobs.filter((j) => j.status === s).length]));
  const unfinished = jobs.some((j) => j.status === 'waiting' || j.status === 'delayed' || j.status === 'active' || j.status === 'blocked');
  const status = unfinished ? 'running' : counts.failed > 0 ? 'failed' : counts.cancelled > 0 ? 'cancelled' : 'completed';
  route(`GET /flows/${flowId}`, flowStatus ?? { flowId, status, counts, jobs: jobs.map(({ ref, id, status: s, dependsOn }) => ({ ref, id, status: s, dependsOn })) });
  const byId = new Map(jobs.map((j) => [j.id, j]));
  for (const j of jobs) {
    route(`GET /jobs/${j.id}/dependencies`, {
      items: j.dependsOn.map((d) => {
        const dep = byId.get(d);
        return { ref: dep?.ref ?? d, id: d, status: dep?.status ?? null, result: dep?.result ?? null, lastError: dep?.lastError ?? null };
      }),
    });
  }
}
