/**
 * Failure summaries of dead-letter groups (API.md v1.3 "Failure summaries"):
 * the rules summary, made without any model from what a group's jobs share.
 * Pure: the history queries (src/history/dlq-summary.ts) gather the facts,
 * this file turns them into the summary's fields and its one or two sentences.
 */

/** Dead-letter jobs of a group read one by one for workers, attempts and payload keys (the newest); the rest are counted only. */
export const SUMMARY_SAMPLE = 50;
/** Example job ids a summary lists (the newest failures). */
export const SUMMARY_EXAMPLES = 5;
/** Payload keys listed at most (top-level keys, sorted). */
export const SUMMARY_KEYS_MAX = 30;
/** Workers listed at most (most failures first). */
export const SUMMARY_WORKERS_MAX = 10;
/** Hours of `hourly`: 24 buckets of one hour, oldest first, the last ending at the time of the read. */
export const SUMMARY_HOURS = 24;
const HOUR_MS = 3_600_000;

/** One sampled dead-letter job of a group (newest failure first). */
export interface SampleJob {
  id: string;
  queue: string;
  type: string;
  /** Attempts the job had used when it was dead-lettered. */
  attempts: number;
  /** Worker of its last execution; null when the history does not say. */
  workerId: string | null;
  /** Top-level keys of its payload; null when the payload was not read (too large, not an object). */
  payloadKeys: string[] | null;
  /** Epoch ms of its failure. */
  failedAt: number;
}

/** What the history says about a group (see src/history/dlq-summary.ts); times epoch ms. */
export interface GroupFacts {
  fingerprint: string;
  sample: string | null;
  count: number;
  types: string[];
  queues: string[];
  firstAt: number;
  lastAt: number;
  /** Failures per hour, {@link SUMMARY_HOURS} buckets, oldest first. */
  hourly: number[];
  /** The newest ≤ {@link SUMMARY_SAMPLE} jobs. */
  jobs: SampleJob[];
  /**
   * Payload keys of completed jobs of the group's main queue and type created
   * before its first failure (the newest few), or null when none was found.
   */
  earlierKeys: string[][] | null;
}

/** The `summary` of a dead-letter group without a model (API.md v1.3); times epoch ms. */
export interface RulesSummary {
  kind: 'rules';
  text: string;
  count: number;
  firstAt: number;
  lastAt: number;
  hourly: number[];
  types: string[];
  queues: string[];
  /** Workers of the sampled jobs' last executions, most failures first. */
  workers: string[];
  /** Distinct attempt counts of the sampled jobs, ascending. */
  attempts: number[];
  /** Top-level payload keys every job whose payload was read had (the newest ten; sorted). */
  payloadKeys: string[];
  /** The newest failures' job ids (≤ {@link SUMMARY_EXAMPLES}). */
  exampleJobIds: string[];
  /** (ours) Payload keys every failure had and none of the jobs completed before the first failure had. */
  newPayloadKeys: string[];
  /** (ours) Jobs read one by one for workers, attempts and payload keys: all of the group up to {@link SUMMARY_SAMPLE}. */
  sampleSize: number;
}

/**
 * The hour bucket (0 = oldest … 23 = the last hour) of a failure at `at`
 * for a read at `now` (both epoch ms), or null when outside the 24 hours.
 */
export function hourBucket(at: number, now: number): number | null {
  const back = Math.floor((now - at) / HOUR_MS);
  if (back < 0) return SUMMARY_HOURS - 1; // a clock a little ahead: counted in the last hour
  return back < SUMMARY_HOURS ? SUMMARY_HOURS - 1 - back : null;
}

/** Counts of each value, most frequent first (ties by value). */
function tally<T extends string | number>(values: T[]): [T, number][] {
  const m = new Map<T, number>();
  for (const v of values) m.set(v, (m.get(v) ?? 0) + 1);
  return [...m.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** Keys present in every list (sorted); [] for no list. */
function shared(lists: string[][]): string[] {
  if (!lists.length) return [];
  let acc = new Set(lists[0]);
  for (const l of lists.slice(1)) {
    const s = new Set(l);
    acc = new Set([...acc].filter((k) => s.has(k)));
  }
  return [...acc].sort();
}

const ordinal = (n: number): string => {
  const t = n % 100;
  if (t >= 11 && t <= 13) return `${n}th`;
  return `${n}${({ 1: 'st', 2: 'nd', 3: 'rd' } as Record<number, string>)[n % 10] ?? 'th'}`;
};

/** `10:02 UTC` within the last day of `now`, else `2026-12-03 10:02 UTC`. */
export function shortTime(at: number, now: number): string {
  const iso = new Date(at).toISOString();
  return now - at < 86_400_000 && now >= at ? `${iso.slice(11, 16)} UTC` : `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

const list = (xs: string[], max = 3): string => (xs.length <= max ? xs.join(', ') : `${xs.slice(0, max).join(', ')} and ${xs.length - max} more`);
const code = (k: string): string => `\`${k}\``;
/** An error message as quoted in a sentence: one line, at most 120 characters. */
const quote = (s: string): string => {
  const line = s.replace(/\s+/g, ' ').trim();
  return `"${line.length > 120 ? `${line.slice(0, 117)}...` : line}"`;
};

/**
 * The rules summary of a group: its fields and one or two sentences an
 * operator can act on — what failed, how often, since when, where, and what
 * the failures share (one worker, one attempt number, a payload key that
 * is new, several types failing alike).
 * @param now epoch ms of the read (the end of the hourly series).
 */
export function rulesSummary(f: GroupFacts, now: number): RulesSummary {
  const jobs = f.jobs;
  const n = jobs.length;
  const workerTally = tally(jobs.map((j) => j.workerId).filter((w): w is string => w !== null));
  const attemptTally = tally(jobs.map((j) => j.attempts));
  const keyed = jobs.map((j) => j.payloadKeys).filter((k): k is string[] => k !== null);
  const payloadKeys = shared(keyed).slice(0, SUMMARY_KEYS_MAX);
  const earlier = f.earlierKeys ?? [];
  const newPayloadKeys = earlier.length ? payloadKeys.filter((k) => !earlier.some((e) => e.includes(k))) : [];
  const all = n === f.count;
  const who = all ? (n === 1 ? 'it' : `all ${n}`) : `the newest ${n} of ${f.count.toLocaleString('en-US')}`;

  // Sentence 1: what, how often, since when, where.
  const what = f.types.length === 1 ? `job${f.count === 1 ? '' : 's'} of type ${f.types[0]}` : `jobs of ${f.types.length} types (${list(f.types)})`;
  const where = f.queues.length === 1 ? `in queue ${f.queues[0]}` : `in ${f.queues.length} queues (${list(f.queues)})`;
  const lastHour = f.hourly[SUMMARY_HOURS - 1] ?? 0;
  const pace = lastHour > 0 ? `, ${lastHour} in the last hour` : f.lastAt < now - 86_400_000 ? ', none in the last 24 h' : '';
  const since = f.count === 1 ? `at ${shortTime(f.firstAt, now)}` : `since ${shortTime(f.firstAt, now)}`;
  const first = `${f.count.toLocaleString('en-US')} ${what} ${where} failed${f.sample !== null ? ` with ${quote(f.sample)}` : ''} ${since}${pace}.`;

  // Sentence 2: what the failures share, and what to do about it.
  const facts: string[] = [];
  const hints: string[] = [];
  if (workerTally.length === 1 && n > 1) {
    facts.push(`${who} failed on worker ${workerTally[0][0]}`);
    hints.push(`check worker ${workerTally[0][0]} (drain or replace it) before retrying the group`);
  } else if (workerTally.length > 1 && n >= 4 && workerTally[0][1] / n >= 0.8) {
    facts.push(`${workerTally[0][1]} of ${n} failed on worker ${workerTally[0][0]}`);
    hints.push(`check worker ${workerTally[0][0]} before retrying the group`);
  } else if (workerTally.length >= 3) {
    facts.push(`they failed on ${workerTally.length} different workers`);
  }
  if (attemptTally.length === 1 && n > 0) {
    const a = attemptTally[0][0];
    const their = n === 1 ? 'its' : 'their';
    const tail = a === 1 ? `on ${their} first attempt` : `after ${their} ${ordinal(a)} attempt`;
    if (facts.length) facts[facts.length - 1] += ` ${tail}`;
    else facts.push(`${who} failed ${tail}`);
  }
  if (newPayloadKeys.length) {
    facts.push(`the failures began with ${newPayloadKeys.length === 1 ? 'a new payload key' : 'new payload keys'} ${newPayloadKeys.slice(0, 3).map(code).join(', ')}`);
    hints.push(`look at the producer that started sending ${newPayloadKeys.slice(0, 3).map(code).join(', ')} and at how the handler reads it`);
  }
  if (f.types.length > 1) {
    facts.push(`the same error across ${f.types.length} types points to a shared dependency rather than one handler`);
    hints.push('check the downstream named in the error, then retry the group');
  }
  if (!hints.length) hints.push('fix the cause named in the error, then retry the group by its fingerprint');
  const second = facts.length
    ? `${cap(facts.join('; '))}: ${hints[0]}.`
    : `${cap(hints[0])}.`;
  return {
    kind: 'rules',
    text: `${first} ${second}`,
    count: f.count,
    firstAt: f.firstAt,
    lastAt: f.lastAt,
    hourly: f.hourly,
    types: f.types,
    queues: f.queues,
    workers: workerTally.slice(0, SUMMARY_WORKERS_MAX).map(([w]) => w),
    attempts: attemptTally.map(([a]) => a).sort((a, b) => a - b),
    payloadKeys,
    exampleJobIds: jobs.slice(0, SUMMARY_EXAMPLES).map((j) => j.id),
    newPayloadKeys,
    sampleSize: n,
  };
}

const cap = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);
