import { setPriority } from 'node:os';

/** Behind by more than this (ms: the age of a batch's oldest entry), the writer thread yields. */
export const YIELD_LAG_MS = 2_000;
/** Caught up to less than this (ms), it runs at normal priority again. */
export const RESUME_LAG_MS = 500;

/**
 * CPU priority of the audit writer thread of a `ROLE=all` process, from how
 * far behind the mirror is. While the writer keeps up (lag under
 * {@link RESUME_LAG_MS}) it runs at normal priority, so the lag stays low;
 * once it is more than {@link YIELD_LAG_MS} behind — the host is saturated,
 * e.g. by a burst of jobs — the thread takes a nice value of `nice`
 * (Linux: setpriority on the calling thread only, not the workers' thread),
 * so the workers clear the burst at full speed while the mirror uses the CPU
 * left and catches up after; events wait in Redis meanwhile, bounded by
 * AUDIT_MAX_BACKLOG. On a 2-core host with PostgreSQL beside it, the
 * writer at normal priority took half of the CPU from the workers during a
 * burst (docs/benchmarks.md). The gap between the two thresholds keeps it
 * from flapping.
 */
export class WriterPriority {
  private yielding = false;

  /**
   * @param nice the nice value while behind (1..19); 0 turns this off.
   * @param apply sets the calling thread's nice value (os.setPriority(0, n)); errors (no permission) are ignored.
   *   Only Linux gives each thread its own nice value: elsewhere the default does nothing (it would slow the whole process).
   */
  constructor(
    private readonly nice: number,
    private readonly apply: (nice: number) => void = (n) => {
      if (process.platform === 'linux') setPriority(0, n);
    },
  ) {}

  /** Called after each batch with the age of its oldest entry (ms). Returns whether the thread now yields. */
  observe(lagMs: number): boolean {
    if (this.nice <= 0) return false;
    if (!this.yielding && lagMs > YIELD_LAG_MS) this.set(true);
    else if (this.yielding && lagMs < RESUME_LAG_MS) this.set(false);
    return this.yielding;
  }

  private set(yielding: boolean): void {
    try {
      this.apply(yielding ? this.nice : 0);
      this.yielding = yielding;
    } catch {
      // Lowering the priority needs no privilege; raising it back needs
      // CAP_SYS_NICE (or RLIMIT_NICE): without it the thread stays where it is.
    }
  }
}
