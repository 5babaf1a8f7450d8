import { readFileSync } from 'node:fs';
import { setPriority } from 'node:os';

/** Behind by more than this (ms: the age of a batch's oldest entry), the writer thread yields. */
export const YIELD_LAG_MS = 2_000;
/** Caught up to less than this (ms), it runs at normal priority again. */
export const RESUME_LAG_MS = 500;

/**
 * CPU priority of the mirror writer thread of a `ROLE=all` process, from how
 * far behind the mirror is. While the writer keeps up (lag under
 * {@link RESUME_LAG_MS}) it runs at normal priority, so the lag stays low;
 * once it is more than {@link YIELD_LAG_MS} behind — the host is saturated,
 * e.g. by a burst of jobs — the thread takes a nice value of `nice`
 * (Linux: setpriority on the calling thread only, not the workers' thread),
 * so the workers clear the burst at full speed while the mirror uses the CPU
 * left and catches up after; events wait in Redis meanwhile, bounded by
 * AUDIT_MAX_BACKLOG. Only where the thread may raise its priority back
 * ({@link mayRaisePriority}); elsewhere it keeps normal priority throughout. On a 2-core host with PostgreSQL beside it, the
 * writer at normal priority took half of the CPU from the workers during a
 * burst (docs/benchmarks.md). The gap between the two thresholds keeps it
 * from flapping.
 */
export class WriterPriority {
  private yielding = false;
  /** False when turned off, or when the thread could lower its priority but never raise it back. */
  readonly enabled: boolean;

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
    mayRaise: () => boolean = () => process.platform === 'linux' && mayRaisePriority(),
  ) {
    this.enabled = nice > 0 && mayRaise();
  }

  /** Called after each batch with the age of its oldest entry (ms). Returns whether the thread now yields. */
  observe(lagMs: number): boolean {
    if (!this.enabled) return false;
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

/**
 * Whether this process may set a thread's nice value back to 0 once it has
 * raised it (Linux, from /proc/self): with CAP_SYS_NICE (root outside a
 * container; Docker drops it by default), or an RLIMIT_NICE of 20 or more
 * (nice may go down to 20 − limit; man 2 setpriority). Without either, a
 * thread that yielded once would stay slowed for good, so the writer does
 * not yield at all.
 * @param read reads a /proc file (tests pass their own).
 */
export function mayRaisePriority(read: (file: string) => string = (f) => readFileSync(f, 'utf8')): boolean {
  try {
    const cap = /^CapEff:\s*([0-9a-f]+)$/m.exec(read('/proc/self/status'));
    if (cap && (BigInt(`0x${cap[1]}`) >> 23n) & 1n) return true; // CAP_SYS_NICE is capability 23
    const limit = /^Max nice priority\s+(\S+)/m.exec(read('/proc/self/limits'));
    return !!limit && (limit[1] === 'unlimited' || Number(limit[1]) >= 20);
  } catch {
    return false;
  }
}
