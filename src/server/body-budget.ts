/**
 * The bytes of request bodies being read and parsed at once in this process
 * (MAX_INFLIGHT_BODY_BYTES, API.md v1.3): a body takes its Content-Length
 * when its reading starts (a chunked one takes its bytes as they arrive) and
 * gives it back once parsed, refused, or abandoned by its client
 * (src/server/json-body.ts). A body that does not fit is refused 503 at once.
 */
export class BodyBudget {
  private used = 0;
  private refusedBusy = 0;
  private refusedLarge = 0;
  private parseMs = 0;

  /** @param maxBytes bytes of bodies at once (MAX_INFLIGHT_BODY_BYTES). */
  constructor(readonly maxBytes: number) {}

  /** Bytes being read and parsed now. */
  get inFlight(): number {
    return this.used;
  }

  /** Bodies refused so far: `busy` (over the in-flight bound, 503), `tooLarge` (over their route's limit, 413). */
  get refused(): { busy: number; tooLarge: number } {
    return { busy: this.refusedBusy, tooLarge: this.refusedLarge };
  }

  /** Takes `bytes` when they fit; false (nothing taken, a refusal counted) when they would go beyond the bound. */
  take(bytes: number): boolean {
    if (this.used + bytes > this.maxBytes) {
      this.refusedBusy++;
      return false;
    }
    this.used += bytes;
    return true;
  }

  /** Gives back bytes {@link take} took. */
  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }

  /** Counts a body refused for its size (413). */
  tooLarge(): void {
    this.refusedLarge++;
  }

  /** Adds to the time spent parsing bodies, ms. */
  parsed(ms: number): void {
    this.parseMs += ms;
  }

  /** Time spent parsing bodies since the process started, ms (the answer deadline's 503 tells how much of its wait). */
  get parseMsTotal(): number {
    return this.parseMs;
  }
}
