import type { FlowRecordStore } from '../core/ports/flows';
import type { Subscription } from '../core/ports/subscription';
import { advanceFlows, flushAcks } from './flow-worker';

/**
 * A full pass over every watched queue this often (ms), besides the wake-ups:
 * covers a wake-up lost while the subscriber reconnected, and hands out again
 * entries whose taker died (their lease ran out).
 */
export const FLOW_SWEEP_MS = 1000;

/**
 * The flow worker's schedule (scheduler role): a pass over a queue as soon as
 * an outcome lands in its empty flow outbox (`listen`, Redis pub/sub), and a
 * pass over every watched queue every {@link FLOW_SWEEP_MS}. Passes never
 * overlap; wake-ups that arrive during one are coalesced into the next. An
 * idle installation costs one script per watched queue per second, not a
 * poll every few ms; the release waits for no timer.
 */
export class FlowWorkerLoop {
  private readonly pending = new Set<string>();
  /** Acknowledgements held for each queue's next step (src/flows/flow-worker.ts). */
  private readonly held = new Map<string, string[]>();
  private everyQueue = false;
  private running: Promise<void> | null = null;
  private sub: Subscription | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  /**
   * @param onError called with a failed pass's error (Redis away): the loop
   *   goes on; the caller throttles its logging.
   */
  constructor(
    private readonly store: FlowRecordStore,
    private readonly onError: (e: unknown) => void,
    private readonly sweepMs = FLOW_SWEEP_MS,
  ) {}

  /** Subscribes, starts the periodic sweep and runs a first pass over every queue. */
  async start(): Promise<void> {
    this.timer = setInterval(() => this.kick(null), this.sweepMs);
    this.timer.unref?.();
    const sub = await this.store.listen((queue) => this.kick(queue));
    if (this.stopped) return sub.close();
    this.sub = sub;
    this.kick(null);
  }

  /** Asks for a pass over `queue` (null: every watched queue), now or right after the running one. */
  kick(queue: string | null): void {
    if (this.stopped) return;
    if (queue === null) this.everyQueue = true;
    else this.pending.add(queue);
    this.running ??= this.drain();
  }

  /** Stops the schedule and waits for a running pass to end. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.sub?.close();
    await this.running;
    await flushAcks(this.store, this.held).catch(() => undefined); // else handed out again after their lease: harmless
  }

  private async drain(): Promise<void> {
    // Yield once so wake-ups of the same moment join this pass.
    await Promise.resolve();
    while (!this.stopped && (this.everyQueue || this.pending.size)) {
      const queues = this.everyQueue ? undefined : [...this.pending];
      this.everyQueue = false;
      this.pending.clear();
      try {
        await advanceFlows(this.store, queues, this.held);
      } catch (e) {
        this.onError(e);
      }
    }
    this.running = null;
  }
}
