import type { QueueKeys } from './keys';

/** Width of one priority band of the waiting score (lua/includes/score.lua): 2^44. */
export const SEQ_SPAN = 2 ** 44;
/** Priorities -100..100 give bands 0..200: the walk below never takes more steps. */
export const MAX_PRIORITY_BANDS = 201;

/** The Redis commands {@link oldestWaitingSince} uses (an ioredis client or Cluster fits). */
export interface WaitingReader {
  zrangebyscore(key: string, min: string, max: string, withScores: 'WITHSCORES', limit: 'LIMIT', offset: number, count: number): Promise<string[]>;
  hmget(key: string, ...fields: string[]): Promise<(string | null)[]>;
}

/**
 * When the longest-waiting job of a queue entered `waiting`, epoch ms on the
 * Redis clock, or null when nothing waits.
 *
 * "Waiting since" is the job's last move into `waiting`: its enqueue (`ca`),
 * or `ua`, which every later move writes (promotion of a delayed job or a
 * retry whose backoff is over, return after an expired lease, release at
 * shutdown, DLQ retry). A planned delay is not waiting: a job delayed by an
 * hour is 0 s old when it becomes due.
 *
 * The waiting set is ordered by score = (100 − priority)·2^44 + sequence, so
 * its first member is the next job to run, not the oldest: a low-priority
 * job behind a stream of high-priority ones would never show. Within one
 * priority (a band) the order is FIFO by enqueue sequence, so the band's first
 * member is the one that has held its place longest. This reads the first
 * member of every band present (ZRANGEBYSCORE from the band's start, LIMIT 1,
 * then one HMGET), and returns the earliest: O(bands present) ≤ 201 steps of
 * O(log n) each, whatever the backlog.
 *
 * Not exact in one case: a job that regains an old place (a retry, a delayed
 * job, a released one keeps its sequence) sits in front of jobs of its
 * priority that arrived earlier than its own return, and hides them until it
 * is claimed. The head of a band that does not move still ages, so a stalled
 * queue still shows.
 */
export async function oldestWaitingSince(redis: WaitingReader, keys: Pick<QueueKeys, 'waiting' | 'base'>): Promise<number | null> {
  const heads: string[] = [];
  let from = '-inf';
  for (let i = 0; i < MAX_PRIORITY_BANDS; i++) {
    const first = await redis.zrangebyscore(keys.waiting, from, '+inf', 'WITHSCORES', 'LIMIT', 0, 1);
    if (first.length < 2) break;
    heads.push(first[0]);
    const band = Math.floor(Number(first[1]) / SEQ_SPAN);
    if (!Number.isFinite(band)) break;
    // The next band starts at (band + 1)·2^44, exact as a double (< 2^53).
    from = String((band + 1) * SEQ_SPAN);
  }
  const since = await Promise.all(heads.map((id) => waitingSinceOf(redis, keys.base + 'job:' + id)));
  let oldest: number | null = null;
  for (const s of since) if (s !== null && (oldest === null || s < oldest)) oldest = s;
  return oldest;
}

/** `ua` (else `ca`) of a job still `waiting`; null when it was claimed or removed meanwhile. */
async function waitingSinceOf(redis: WaitingReader, jobKey: string): Promise<number | null> {
  const [s, ua, ca] = await redis.hmget(jobKey, 's', 'ua', 'ca');
  if (s !== 'waiting') return null;
  const raw = ua ?? ca;
  const t = raw === null ? NaN : Number(raw);
  return Number.isFinite(t) ? t : null;
}
