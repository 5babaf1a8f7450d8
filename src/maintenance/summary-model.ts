import type { ChatRequest } from '../core/summary-request';

/** Largest answer read from the model, bytes (a chat completion of 400 tokens is a few KiB). */
const ANSWER_MAX_BYTES = 1_048_576;

/** A model call that did not give an answer; its message names no secret (never the key, never the request). */
export class ModelCallError extends Error {}

/**
 * One chat-completions call (POST `url`, JSON), for the failure summaries
 * (docs/failure-summaries.md). The URL is the operator's own: loopback and
 * private addresses are allowed, unlike the `http.request` handler's
 * (src/core/address-policy.ts is deliberately not applied); redirects are not
 * followed, so the key is never sent anywhere else.
 * @param key sent as `Authorization: Bearer`; null = none. Never logged, never in an error.
 * @param timeoutMs the whole call, answer read included.
 * @returns the parsed JSON answer.
 * @throws ModelCallError on a timeout, a connection error, a non-2xx status, an answer over 1 MiB or not JSON.
 */
export async function callModel(url: string, key: string | null, body: ChatRequest, timeoutMs: number): Promise<unknown> {
  const signal = AbortSignal.timeout(timeoutMs);
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
      body: JSON.stringify(body),
      redirect: 'manual',
      signal,
    });
  } catch (e) {
    throw new ModelCallError(signal.aborted ? `the model did not answer within ${timeoutMs} ms` : `the model could not be reached (${causeOf(e)})`);
  }
  try {
    if (res.status < 200 || res.status > 299) throw new ModelCallError(`the model answered HTTP ${res.status}`);
    const text = await readCapped(res);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new ModelCallError('the model answered something that is not JSON');
    }
  } catch (e) {
    if (e instanceof ModelCallError) throw e;
    throw new ModelCallError(signal.aborted ? `the model did not answer within ${timeoutMs} ms` : 'the model\'s answer broke off');
  } finally {
    await res.body?.cancel().catch(() => undefined);
  }
}

/** The answer's text, refused past {@link ANSWER_MAX_BYTES}. */
async function readCapped(res: Response): Promise<string> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let n = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    n += value.byteLength;
    if (n > ANSWER_MAX_BYTES) throw new ModelCallError(`the model's answer is over ${ANSWER_MAX_BYTES} bytes`);
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A connection error's code (ECONNREFUSED…), never its whole text. */
function causeOf(e: unknown): string {
  const c = (e as { cause?: { code?: unknown } })?.cause?.code;
  return typeof c === 'string' && /^[A-Z_]{1,40}$/.test(c) ? c : 'connection error';
}
