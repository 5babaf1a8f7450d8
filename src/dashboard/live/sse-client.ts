import type { ServerResponse } from 'node:http';
import { hidePayloadsIn } from '../../core/hidden-payloads';

/** Bytes a client may have unsent before it is dropped (a slow or stalled reader must not hold the process's memory). */
export const MAX_BUFFERED_BYTES = 1024 * 1024;

/**
 * One Server-Sent Events connection (WHATWG HTML "Server-sent events"):
 * `event: <name>\ndata: <json>\n\n` frames and `: comment` lines on the raw
 * response. Bounded: once more than `maxBufferedBytes` wait unsent (the
 * client reads slower than it is sent to), the connection is destroyed and
 * the client reconnects (EventSource does by itself) and resynchronizes.
 */
export class SseClient {
  private closed = false;
  private readonly onCloseFns: (() => void)[] = [];

  /**
   * @param project the project the client's credentials act in (what it may see).
   * @param jobId the job of a `?job=` stream, or null for the overview stream.
   * @param hidePayloads a member who hides payloads (API.md v1.3): every event's data goes
   *   through {@link hidePayloadsIn}, as the HTTP answers do.
   */
  constructor(
    readonly raw: ServerResponse,
    readonly project: string,
    readonly jobId: string | null,
    private readonly maxBufferedBytes = MAX_BUFFERED_BYTES,
    readonly hidePayloads = false,
  ) {
    raw.once('close', () => this.end());
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Calls `fn` once when the connection ends (either side). */
  onClose(fn: () => void): void {
    if (this.closed) fn();
    else this.onCloseFns.push(fn);
  }

  /** Sends one event; false when the client is gone or was just dropped for being slow. */
  send(event: string, data: unknown): boolean {
    return this.write(`event: ${event}\ndata: ${JSON.stringify(this.hidePayloads ? hidePayloadsIn(data) : data)}\n\n`);
  }

  /** A comment line (heartbeats: proxies and the client see traffic). */
  comment(text: string): boolean {
    return this.write(`: ${text}\n\n`);
  }

  private write(frame: string): boolean {
    if (this.closed) return false;
    if (this.raw.writableLength > this.maxBufferedBytes) {
      this.raw.destroy();
      this.end();
      return false;
    }
    this.raw.write(frame);
    return true;
  }

  /** Ends the stream (server shutdown). */
  close(): void {
    if (!this.closed) this.raw.end();
    this.end();
  }

  private end(): void {
    if (this.closed) return;
    this.closed = true;
    for (const fn of this.onCloseFns.splice(0)) fn();
  }
}
