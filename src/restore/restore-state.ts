import type { RestoreStore } from '../core/ports';

/** How often a process reads the restore state in the background, ms. */
export const RESTORE_STATE_POLL_MS = 500;

/**
 * Whether this process should answer as `restoring` (API.md v1.3 "Security
 * and recovery rules made exact": `/readyz` never says ok while a valid key
 * would get 401): while some process rebuilds Redis from PostgreSQL
 * (RestoreStore.setRestoring), and as soon as the installation marker is
 * gone from a Redis this process saw it on (Redis lost its data; the restore
 * watch notices at its next pass, src/restore/loss-watch.ts). A process that
 * never saw the marker (a new installation, or started after the loss) goes
 * by the flag alone.
 *
 * Read in the background every {@link RESTORE_STATE_POLL_MS} once started (so
 * the marker is seen before Redis can lose it, and the request path reads no
 * Redis for it), and on demand by `/readyz`.
 */
export class RestoreState {
  private seen = false;
  private last = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly store: RestoreStore) {}

  /** Asks Redis now. @throws when Redis cannot be reached. */
  async restoring(): Promise<boolean> {
    const s = await this.store.state();
    if (s.installed) this.seen = true;
    this.last = s.restoring || (!s.installed && this.seen);
    return this.last;
  }

  /** The answer of the latest read (false before any, or while Redis does not answer). */
  restoringNow(): boolean {
    return this.last;
  }

  start(intervalMs = RESTORE_STATE_POLL_MS): void {
    if (this.timer) return;
    const read = () => void this.restoring().catch(() => undefined);
    read();
    this.timer = setInterval(read, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
