import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../logging/logger';
import { errorBody, mapError } from '../http/error-envelope';

/** Node's limit on the request line plus headers (http `maxHeaderSize` default), bytes. */
export const MAX_HEADER_BYTES = 16 * 1024;

/** How long a client gets to read the error answer before its socket is destroyed, ms. */
const LINGER_MS = 1000;

/**
 * An error Node's HTTP parser or its timeouts raised before (or while) a
 * request could be handled: as the envelope status, code and message.
 * - `ERR_HTTP_REQUEST_TIMEOUT`: headers or the whole request too slow → 408;
 * - `HPE_HEADER_OVERFLOW`: request line + headers over {@link MAX_HEADER_BYTES} → 431;
 * - any other parse error (malformed request line, bad header, bad chunk) → 400.
 */
export function clientErrorStatus(code: string | undefined): { status: number; message: string } {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, message: 'the request was not received in time (HTTP_HEADERS_TIMEOUT_MS / HTTP_REQUEST_TIMEOUT_MS)' };
  if (code === 'HPE_HEADER_OVERFLOW') return { status: 431, message: `request line and headers larger than ${MAX_HEADER_BYTES} bytes` };
  return { status: 400, message: 'malformed HTTP request' };
}

/**
 * Fastify's `clientErrorHandler`: Node emits `clientError` when it cannot
 * parse a request or a request times out, before any route or hook runs. The
 * answer is still the API.md envelope, written raw on the socket with a
 * generated `X-Request-Id` (the request's own headers were not read), then
 * the socket is closed. Nothing is written when a response has already
 * started on that socket (the peer would see garbage), nor on a reset socket.
 * Logged at debug level with the error code only (never the bytes received).
 */
export function createClientErrorHandler(log: Logger): (err: Error & { code?: string }, socket: Socket) => void {
  return (err, socket) => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const { status, message } = clientErrorStatus(err.code);
    const id = randomUUID();
    log.debug({ reqId: id, status, code: err.code }, 'client error');
    const inFlight = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
    if (!socket.writable || (inFlight && inFlight.headersSent)) {
      socket.destroy();
      return;
    }
    const m = { ...mapError(Object.assign(new Error(message), { statusCode: status })), message };
    const body = JSON.stringify(errorBody(m, id));
    const head =
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${id}\r\nConnection: close\r\n\r\n`;
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.end(head + body, () => {
      clearTimeout(timer);
      socket.destroy();
    });
  };
}
