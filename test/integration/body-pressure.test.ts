/**
 * Large bodies against a real server process (API.md v1.3: MAX_REQUEST_BYTES,
 * MAX_INFLIGHT_BODY_BYTES, `/healthz` within 1 s while large bodies are
 * parsed; the third probe saw 40 concurrent 60 MB POST /flows take /healthz
 * to 9.3 s):
 * - several large flows at once: every `/healthz` meanwhile answers within
 *   the contract's 1 s, and every flow is created;
 * - a body over its route's limit is answered 413 before the client has sent
 *   it (declared by Content-Length: at once; chunked: once the limit is
 *   passed), and the connection is closed;
 * - bodies beyond the in-flight bound: 503 with Retry-After at once, unread;
 * - uploads abandoned midway (declared or chunked) give their bytes back:
 *   the in-flight gauge returns to 0.
 */
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { killAll, type SluiceProcess, startSluice } from '../support/process';
import { openStore, type TestStore } from '../support/redis';
import { waitUntil } from '../support/timing';

const MIB = 1_048_576;
/** A prober: GET /healthz every 50 ms after the previous answer, each round trip's ms on a line (failures as 99999). */
const PROBER = `
const http = require('node:http');
const url = new URL('/healthz', process.argv[1]);
const once = () => { const t0 = Date.now(); http.get(url, { agent: false }, (res) => { res.resume(); res.on('end', () => { process.stdout.write((res.statusCode === 200 ? Date.now() - t0 : 99999) + '\\n'); setTimeout(once, 50); }); }).on('error', () => { process.stdout.write('99999\\n'); setTimeout(once, 50); }); };
once();`;
const MAX_REQUEST = 16 * MIB;
const MAX_INFLIGHT = 4 * MAX_REQUEST;

let t: TestStore;
let p: SluiceProcess | undefined;
let base: URL;

beforeAll(async () => {
  t = await openStore('bodyp');
  p = await startSluice({
    REDIS_PREFIX: t.prefix,
    ROLE: 'api',
    MAX_REQUEST_BYTES: String(MAX_REQUEST),
    MAX_INFLIGHT_BODY_BYTES: String(MAX_INFLIGHT),
    // The flows of the pressure test must be answered 201, not cut by the deadline on a loaded host.
    HTTP_ANSWER_TIMEOUT_MS: '120000',
    HTTP_REQUEST_TIMEOUT_MS: '120000',
  });
  base = new URL(p.url());
  for (const q of ['bp-a', 'bp-b']) expect((await send('PUT', `/queues/${q}`, JSON.stringify({ external: true }))).status).toBe(200);
});
afterAll(async () => {
  await killAll([p]);
  await t?.close();
});

/** One request on a connection of its own: status, headers, body text, and when the answer came (ms since the epoch). */
function send(method: string, path: string, body?: Buffer | string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string; at: number }> {
  return new Promise((resolve, reject) => {
    const r = request({ host: base.hostname, port: base.port, path, method, agent: false, headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text, at: Date.now() }));
    });
    r.on('error', reject);
    r.end(body);
  });
}

/** The in-flight gauge of the process (`sluice_http_body_bytes_in_flight`). */
async function inFlight(): Promise<number> {
  const m = /^sluice_http_body_bytes_in_flight (\d+)$/m.exec((await send('GET', '/metrics')).text);
  if (!m) throw new Error('no sluice_http_body_bytes_in_flight in /metrics');
  return Number(m[1]);
}

/** A raw connection that sent `head` (request line and headers) and maybe some body; `answer` resolves with all it got back. */
function rawUpload(head: string): { socket: Socket; answer: Promise<string>; sent: () => number } {
  const socket = connect(Number(base.port), base.hostname);
  let got = '';
  let sent = 0;
  const answer = new Promise<string>((resolve) => {
    socket.on('data', (d) => (got += d.toString('latin1')));
    socket.on('close', () => resolve(got));
    socket.on('error', () => undefined);
  });
  socket.write(head);
  const write = socket.write.bind(socket);
  socket.write = ((chunk: Buffer | string, ...rest: never[]) => {
    sent += Buffer.byteLength(chunk);
    return write(chunk, ...rest);
  }) as typeof socket.write;
  return { socket, answer, sent: () => sent };
}

/** Resolves once the socket has received something (the server answered). */
const firstByte = (socket: Socket) => new Promise<void>((r) => socket.once('data', () => r()));

/** A flow body of `jobs` jobs, about `bytes` in all: payloads of small objects and strings, as orders would be. */
function flowBody(jobs: number, bytes: number): Buffer {
  const per = Math.floor(bytes / jobs);
  const line = (i: number) => ({ sku: `SKU-${String(i).padStart(4, '0')}`, qty: i % 7, note: 'n'.repeat(60) });
  const lines = Array.from({ length: Math.floor((per - 100) / (JSON.stringify(line(0)).length + 1)) }, (_, i) => line(i));
  return Buffer.from(
    JSON.stringify({ jobs: Array.from({ length: jobs }, (_, i) => ({ ref: `r${i}`, type: 't', queue: i % 2 ? 'bp-a' : 'bp-b', payload: { order: i, lines }, ...(i ? { dependsOn: ['r0'] } : {}) })) }),
  );
}

test('several large flows at once: every /healthz meanwhile answers within 1 s, every flow is created', async () => {
  const body = flowBody(1000, 12 * MIB);
  expect(body.length).toBeGreaterThan(11 * MIB);
  expect(body.length).toBeLessThan(MAX_REQUEST);
  // Order-like payloads: at idle /healthz peaks ~200 ms here, ~700 ms with the heavy steps' turns
  // (src/http/heavy-turns.ts) disabled; payloads of tiny objects separate the two further (~420 vs
  // ~1,390 ms) but sit too near the bound on a loaded 2-core runner (scripts/bench/bodies.js measures them).
  // /healthz is timed from a process of its own: this one's event loop is busy sending 60 MB and
  // reading the answers, and its own stalls are not the server's.
  const prober = spawn(process.execPath, ['-e', PROBER, base.origin], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  prober.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  await new Promise((r) => prober.stdout!.once('data', r));
  // 5 × 12 MiB: within the in-flight bound (64 MiB), so all are read and parsed together.
  const flows = await Promise.all(Array.from({ length: 5 }, () => send('POST', '/flows', body)));
  if (prober.exitCode === null) {
    const exited = new Promise((r) => prober.once('exit', r));
    prober.kill();
    await exited;
  }
  const lat = out.split('\n').filter(Boolean).map(Number);
  process.stdout.write(`healthz max ${Math.max(...lat)} ms over ${lat.length}\n`);
  expect(lat.length).toBeGreaterThanOrEqual(5);
  expect(Math.max(...lat)).toBeLessThan(1000);
  expect(flows.map((f) => f.status)).toEqual([201, 201, 201, 201, 201]);
  for (const f of flows) expect(JSON.parse(f.text).jobs).toHaveLength(1000);
  expect(await inFlight()).toBe(0);
}, 180_000);

test('a body over its route limit is answered 413 before the client has sent it, and the connection closed', async () => {
  // Declared by Content-Length (a 60 MB flow, as the probe sent): answered before any body byte is sent.
  const declared = rawUpload(`POST /flows HTTP/1.1\r\nHost: ${base.host}\r\nContent-Type: application/json\r\nContent-Length: ${60_000_000}\r\n\r\n`);
  const head = await declared.answer;
  expect(head).toMatch(/^HTTP\/1\.1 413 /);
  expect(head).toMatch(/\r\nconnection: close\r\n/i);
  expect(head).toContain('"code":"payload_too_large"');
  expect(head).toContain(`larger than ${MAX_REQUEST} bytes`);
  expect(declared.sent()).toBe(0);
  // One byte over the limit of a one-job route (MAX_PAYLOAD_BYTES + 64 KiB).
  const one = rawUpload(`POST /jobs HTTP/1.1\r\nHost: ${base.host}\r\nContent-Type: application/json\r\nContent-Length: ${524_288 + 65_536 + 1}\r\n\r\n`);
  expect(await one.answer).toMatch(/^HTTP\/1\.1 413 [^]*"code":"payload_too_large"/);
  expect(one.sent()).toBe(0);

  // Chunked: the server stops at the limit; the client, still sending, gets the 413.
  const chunked = rawUpload(`POST /jobs/batch HTTP/1.1\r\nHost: ${base.host}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
  const answered = firstByte(chunked.socket).then(() => true);
  const chunk = Buffer.alloc(MIB, 'x');
  let done = false;
  void answered.then(() => (done = true));
  for (let i = 0; i < 64 && !done && !chunked.socket.destroyed; i++) {
    await new Promise<void>((r) => chunked.socket.write(`${chunk.length.toString(16)}\r\n`, () => chunked.socket.write(chunk, () => chunked.socket.write('\r\n', () => r()))));
  }
  expect(await Promise.race([answered, new Promise((r) => setTimeout(() => r(false), 10_000))])).toBe(true);
  const text = await chunked.answer;
  expect(text).toMatch(/^HTTP\/1\.1 413 [^]*"code":"payload_too_large"/);
  // Answered once the limit was passed, long before the 64 MiB the client meant to send.
  expect(chunked.sent()).toBeGreaterThan(MAX_REQUEST);
  expect(chunked.sent()).toBeLessThan(MAX_REQUEST + 16 * MIB);
  expect(await inFlight()).toBe(0);
});

test('beyond MAX_INFLIGHT_BODY_BYTES: 503 with Retry-After at once, unread; abandoned uploads give their bytes back', async () => {
  // Four uploads of 16 MiB declared, each stalled after its first 64 KiB: they hold the whole bound.
  const stalled = Array.from({ length: 4 }, () => rawUpload(`POST /flows HTTP/1.1\r\nHost: ${base.host}\r\nContent-Type: application/json\r\nContent-Length: ${MAX_REQUEST}\r\n\r\n`));
  for (const s of stalled) s.socket.write(Buffer.alloc(65_536, ' '));
  await waitUntil('the stalled uploads hold the bound', async () => (await inFlight()) === MAX_INFLIGHT, 10_000);

  const refused = rawUpload(`POST /jobs/batch HTTP/1.1\r\nHost: ${base.host}\r\nContent-Type: application/json\r\nContent-Length: ${MIB}\r\n\r\n`);
  const text = await refused.answer;
  expect(text).toMatch(/^HTTP\/1\.1 503 /);
  expect(text).toMatch(/\r\nretry-after: 1\r\n/i);
  expect(text).toMatch(/\r\nconnection: close\r\n/i);
  expect(text).toContain('"code":"unavailable"');
  expect(text).toContain('MAX_INFLIGHT_BODY_BYTES');
  expect(refused.sent()).toBe(0);
  // A chunked one takes its bytes as they come: refused at its first chunk.
  const chunked = rawUpload(`POST /flows HTTP/1.1\r\nHost: ${base.host}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
  chunked.socket.write('10\r\n{"jobs":[]}     \r\n');
  expect(await chunked.answer).toMatch(/^HTTP\/1\.1 503 [^]*retry-after: 1/i);

  // The clients go away midway: every byte comes back.
  for (const s of stalled) s.socket.destroy();
  await waitUntil('in-flight back to 0 after aborted uploads', async () => (await inFlight()) === 0, 10_000);

  // A chunked upload aborted midway gives back what it took.
  const partial = rawUpload(`POST /flows HTTP/1.1\r\nHost: ${base.host}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
  partial.socket.write(`100000\r\n${' '.repeat(MIB)}\r\n`);
  await waitUntil('the chunked upload holds its bytes', async () => (await inFlight()) === MIB, 10_000);
  partial.socket.destroy();
  await waitUntil('in-flight back to 0 after an aborted chunked upload', async () => (await inFlight()) === 0, 10_000);

  // And the server reads bodies again.
  const ok = await send('POST', '/jobs/batch', JSON.stringify({ jobs: [{ type: 't', queue: 'bp-a' }] }));
  expect(ok.status).toBe(201);
  const m = (await send('GET', '/metrics')).text;
  expect(m).toMatch(/^sluice_http_bodies_refused_total\{reason="busy"\} [1-9]/m);
  expect(m).toMatch(/^sluice_http_bodies_refused_total\{reason="too_large"\} [1-9]/m);
});
