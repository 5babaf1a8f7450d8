import { get, IncomingHttpHeaders, IncomingMessage } from 'node:http';

export interface SseEvent {
  event: string;
  data: unknown;
}

/** A Server-Sent Events stream read by a real HTTP client (node:http, its own socket). */
export interface SseStream {
  status: number;
  headers: IncomingHttpHeaders;
  events: SseEvent[];
  comments: string[];
  /** The body, when the answer was not a stream (an error envelope). */
  body: string;
  /** Resolves with the first event (from index `from` on) that `pred` accepts. @throws after `timeoutMs`. */
  waitFor(pred: (e: SseEvent) => boolean, timeoutMs?: number, from?: number): Promise<SseEvent>;
  close(): void;
}

/** Opens `url` and parses `event:`/`data:` frames and `:` comments as they arrive. */
export function openSse(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const req = get(url, { headers: { accept: 'text/event-stream', ...headers }, agent: false }, (res: IncomingMessage) => {
      const s: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        events: [],
        comments: [],
        body: '',
        waitFor: (pred, timeoutMs = 10000, from = 0) =>
          new Promise((ok, fail) => {
            const t0 = Date.now();
            const tick = () => {
              const hit = s.events.slice(from).find(pred);
              if (hit) return ok(hit);
              if (Date.now() - t0 > timeoutMs) return fail(new Error(`no such event within ${timeoutMs} ms; got ${s.events.map((e) => e.event).join(',')}`));
              setTimeout(tick, 20);
            };
            tick();
          }),
        close: () => req.destroy(),
      };
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (!String(res.headers['content-type']).startsWith('text/event-stream')) {
          s.body += chunk;
          return;
        }
        buf += chunk;
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of frame.split('\n')) {
            if (line.startsWith(':')) s.comments.push(line.slice(1).trim());
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length) s.events.push({ event, data: JSON.parse(data.join('\n')) });
        }
      });
      res.on('error', () => undefined);
      resolve(s);
    });
    req.on('error', reject);
  });
}
